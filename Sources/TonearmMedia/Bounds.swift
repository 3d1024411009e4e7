/// The ranges a setting may take, in one place: the config parser, the flags, the JSON-RPC and
/// MPD front-ends, the state file and `tonearmctl` all check against these. The core holds none of
/// them: it keeps what the player, having checked it here, gives it.
package enum Bounds {
    /// Software volume, and an announcement's or an alarm's, in percent.
    package static let volume = 0...100
    /// A change of the volume.
    package static let volumeDelta = -100...100
    /// ReplayGain's preamp, in dB.
    package static let preampDB = -15.0...15.0
    /// The device's buffer (`output.buffer_ms`), in milliseconds.
    package static let bufferMilliseconds = 10...10_000
    /// How long two items overlap in a crossfade, in seconds (0: gapless joins).
    package static let crossfadeSeconds = 0.0...15.0
    /// The pacing speed's ceiling (`output.speed`, for tests); it must be above 0.
    package static let fastestSpeed = 1000.0

    /// "-15 to 15": a range as the messages say it.
    package static func text(_ range: ClosedRange<Double>) -> String {
        func number(_ value: Double) -> String { value.rounded() == value ? String(Int(value)) : String(value) }
        return "\(number(range.lowerBound)) to \(number(range.upperBound))"
    }

    package static func text(_ range: ClosedRange<Int>) -> String { "\(range.lowerBound) to \(range.upperBound)" }
}
