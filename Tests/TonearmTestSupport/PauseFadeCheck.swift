/// What a pause that fades (`output.fade_on_pause`) leaves in a capture of 16-bit PCM: the
/// source with its `rate / 200` frames before `pauseFrame` fading linearly to silence (the
/// last of them silent) and as many from `pauseFrame` on fading up to full (the last at full),
/// every other sample as it is.
package struct PauseFadeCheck: CustomStringConvertible {
    /// Samples that differ outside the two fades.
    package var changedOutside = 0
    /// The largest difference inside the fades from the source scaled by the fade, rounded.
    package var worstInFades = 0.0
    package var description: String

    package init(capture: [Int16], source: [Int16], pauseFrame: Int, rate: Int, channels: Int) {
        let ramp = rate / 200
        func level(_ frame: Int) -> Double {
            if frame >= pauseFrame - ramp && frame < pauseFrame { return 1 - Double(frame - (pauseFrame - ramp) + 1) / Double(ramp) }
            if frame >= pauseFrame && frame < pauseFrame + ramp { return Double(frame - pauseFrame + 1) / Double(ramp) }
            return 1
        }
        var firstChanged: Int?
        for frame in 0..<min(capture.count, source.count) / channels {
            let level = level(frame)
            for channel in 0..<channels {
                let index = frame * channels + channel
                if level == 1 {
                    if capture[index] != source[index] {
                        changedOutside += 1
                        firstChanged = firstChanged ?? frame
                    }
                } else {
                    let expected = (Double(source[index]) * level).rounded()
                    worstInFades = max(worstInFades, abs(Double(capture[index]) - expected))
                }
            }
        }
        let around = [pauseFrame - ramp - 1, pauseFrame - 1, pauseFrame, pauseFrame + ramp]
            .filter { $0 >= 0 && ($0 + 1) * channels <= min(capture.count, source.count) }
            .map { "frame \($0): \(capture[$0 * channels]) of \(source[$0 * channels])" }
        description =
            "pause at frame \(pauseFrame): \(changedOutside) samples changed outside the fades"
            + (firstChanged.map { " (first at frame \($0))" } ?? "") + ", worst in them \(worstInFades); \(around)"
    }

    /// The capture is the source with the two fades, within 1 LSB in them.
    package var holds: Bool { changedOutside == 0 && worstInFades <= 1 }
}
