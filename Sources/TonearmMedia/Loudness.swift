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

    /// The gain, dB, that brings this item to `target`, lowered so that its true peak stays at
    /// or below full scale: a quiet item with loud peaks is raised only as far as they allow.
    public func gain(towards target: Double = Loudness.referenceLUFS) -> Double {
        min(target - integrated, -truePeak)
    }
}
