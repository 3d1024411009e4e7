/// An item's loudness as EBU R128 measures it (libebur128): integrated loudness, loudness range
/// and true peak. What levels a mixed queue without ReplayGain tags.
package struct Loudness: Sendable, Equatable, Codable {
    /// Integrated loudness, LUFS.
    package var integrated: Double
    /// Loudness range, LU.
    package var range: Double
    /// True peak, dBTP (0 is full scale; above it, a reconstructed sample would clip).
    package var truePeak: Double

    package init(integrated: Double, range: Double, truePeak: Double) {
        self.integrated = integrated
        self.range = range
        self.truePeak = truePeak
    }

    /// ReplayGain 2.0's reference level, and `replay_gain.target_lufs`' default.
    package static let referenceLUFS = -18.0

    /// The gain, dB, that brings this item to `target` (plus `preamp`), lowered so that its true
    /// peak stays at or below full scale: a quiet item with loud peaks is raised only as far as
    /// they allow.
    package func gain(towards target: Double = Loudness.referenceLUFS, preamp: Double = 0) -> Double {
        min(target - integrated + preamp, -truePeak)
    }
}

/// What measuring a file found.
package enum LoudnessMeasurement: Sendable, Equatable {
    case measured(Loudness)
    /// Nothing above the meter's gate: no loudness to level to.
    case silent
    /// The file could not be decoded; not tried again until it changes.
    case unmeasurable

    package var loudness: Loudness? {
        if case .measured(let loudness) = self { return loudness }
        return nil
    }
}

/// A file as measurements know it: its path and what `stat` says of it. A file written again
/// (another size or time) is another identity, measured anew.
package struct FileIdentity: Sendable, Hashable {
    /// Absolute path.
    package var path: String
    package var size: Int
    /// Modification time, whole seconds since 1970.
    package var mtime: Int

    package init(path: String, size: Int, mtime: Int) {
        self.path = path
        self.size = size
        self.mtime = mtime
    }
}

/// Where measurements are kept across restarts (the library's database). Blocking: called on
/// the measuring thread only.
package protocol LoudnessStore: Sendable {
    /// What was measured of these files, for those measured in their current identity.
    func measurements(of files: [FileIdentity]) throws -> [FileIdentity: LoudnessMeasurement]
    func store(_ measurements: [(FileIdentity, LoudnessMeasurement)]) throws
    /// Library files never measured in their current identity, after `cursor` (0: from the
    /// start), at most `limit`; and the cursor to go on from.
    func unmeasured(after cursor: Int, limit: Int) throws -> (files: [FileIdentity], cursor: Int)
}
