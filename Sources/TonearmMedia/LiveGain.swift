/// A live stream's automatic gain (`replay_gain.live = "agc"`): slow and gentle, so a station's
/// own dynamics survive and only its overall level is brought towards the target. It follows the
/// stream's short-term loudness (EBU R128's 3 s window), within ±`limitDB`, changing by at most
/// `decibelsPerSecond` of audio. Quiet passages (below `gateLUFS`: silence, a pause between
/// programmes) hold the gain where it is rather than raise it. Pure: the caller measures and
/// says how much audio passed.
package struct LiveGain: Sendable, Equatable {
    package static let limitDB = 6.0
    /// 1 dB per 5 s.
    package static let decibelsPerSecond = 0.2
    package static let gateLUFS = -50.0

    /// The gain now, dB.
    package private(set) var decibels = 0.0

    package init() {}

    /// `seconds` more audio passed, whose short-term loudness (before this gain) is `shortTermLUFS`.
    package mutating func update(shortTermLUFS: Double, target: Double, seconds: Double) {
        guard shortTermLUFS.isFinite, shortTermLUFS >= Self.gateLUFS, seconds > 0 else { return }
        let wanted = min(max(target - shortTermLUFS, -Self.limitDB), Self.limitDB)
        let step = Self.decibelsPerSecond * seconds
        decibels += min(max(wanted - decibels, -step), step)
    }
}
