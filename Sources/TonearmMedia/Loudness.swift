/// An item's loudness as EBU R128 measures it (libebur128): integrated loudness, loudness range
/// and true peak. What levels a mixed queue without ReplayGain tags.
public struct Loudness: Sendable, Equatable, Codable {
    /// Integrated loudness, LUFS.
    public var integrated: Double
    /// Loudness range, LU.
    public var range: Double
    /// True peak, dBTP (0 is full scale; above it, a reconstructed sample would clip).
    public var truePeak: Double

    public init(integrated: Double, range: Double, truePeak: Double) {
        self.integrated = integrated
        self.range = range
        self.truePeak = truePeak
    }

    /// ReplayGain 2.0's reference level, and `replay_gain.target_lufs`' default.
    public static let referenceLUFS = -18.0

    /// The gain, dB, that brings this item to `target` (plus `preamp`), lowered so that its true
    /// peak stays at or below full scale: a quiet item with loud peaks is raised only as far as
    /// they allow.
    public func gain(towards target: Double = Loudness.referenceLUFS, preamp: Double = 0) -> Double {
        min(target - integrated + preamp, -truePeak)
    }
}

/// What measuring a file found.
public enum LoudnessMeasurement: Sendable, Equatable {
    case measured(Loudness)
    /// Nothing above the meter's gate: no loudness to level to.
    case silent
    /// The file could not be decoded; not tried again until it changes.
    case unmeasurable

    public var loudness: Loudness? {
        if case .measured(let loudness) = self { return loudness }
        return nil
    }
}

/// A file as measurements know it: its path and what `stat` says of it. A file written again
/// (another size or time) is another identity, measured anew.
public struct FileIdentity: Sendable, Hashable {
    /// Absolute path.
    public var path: String
    public var size: Int
    /// Modification time, whole seconds since 1970.
    public var mtime: Int

    public init(path: String, size: Int, mtime: Int) {
        self.path = path
        self.size = size
        self.mtime = mtime
    }
}

/// Where measurements are kept across restarts (the library's database). Blocking: called on
/// the measuring thread only.
public protocol LoudnessStore: Sendable {
    /// What was measured of these files, for those measured in their current identity.
    func measurements(of files: [FileIdentity]) throws -> [FileIdentity: LoudnessMeasurement]
    func store(_ measurements: [(FileIdentity, LoudnessMeasurement)]) throws
    /// Library files never measured in their current identity, after `cursor` (0: from the
    /// start), at most `limit`; and the cursor to go on from.
    func unmeasured(after cursor: Int, limit: Int) throws -> (files: [FileIdentity], cursor: Int)
}
