import Testing
import TonearmMedia

@Suite("A live stream's automatic gain")
struct LiveGainTests {
    /// Feeds `seconds` of audio at `lufs` in 100 ms steps.
    private func run(_ gain: inout LiveGain, lufs: Double, seconds: Double, target: Double = -18) -> [Double] {
        (0..<Int(seconds * 10)).map { _ in
            gain.update(shortTermLUFS: lufs, target: target, seconds: 0.1)
            return gain.decibels
        }
    }

    @Test func aQuietStreamRisesOneDecibelPerFiveSecondsToSixAtMost() {
        var gain = LiveGain()
        let path = run(&gain, lufs: -30, seconds: 60)
        #expect(abs(path[49] - 1) < 1e-9, "1 dB after 5 s: \(path[49])")
        #expect(abs(path[299] - 6) < 1e-9, "6 dB after 30 s: \(path[299])")
        #expect(path.last == 6, "and no more: \(path.last ?? 0)")
        #expect(zip(path, path.dropFirst()).allSatisfy { $1 - $0 <= 0.02 + 1e-12 && $1 >= $0 })
    }

    @Test func aLoudStreamFallsTheSameWay() {
        var gain = LiveGain()
        let path = run(&gain, lufs: -8, seconds: 60)
        #expect(abs(path[49] + 1) < 1e-9)
        #expect(path.last == -6)
    }

    @Test func aStreamNearTheTargetIsLeftNearlyAlone() {
        var gain = LiveGain()
        let path = run(&gain, lufs: -18.5, seconds: 20)
        #expect(abs(path.last! - 0.5) < 1e-9)
    }

    @Test(arguments: [-70.0, -Double.infinity, .nan])
    func silenceHoldsTheGain(_ lufs: Double) {
        var gain = LiveGain()
        _ = run(&gain, lufs: -24, seconds: 10)
        let before = gain.decibels
        _ = run(&gain, lufs: lufs, seconds: 30)
        #expect(gain.decibels == before)
    }
}
