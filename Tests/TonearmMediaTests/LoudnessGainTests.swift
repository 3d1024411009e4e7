import Testing
import TonearmMedia

@Suite("Loudness becomes a gain")
struct LoudnessGainTests {
    @Test(arguments: [
        // integrated, true peak, target -> gain: raised or lowered to the target, unless the peak forbids it
        (-23.0, -10.0, -18.0, 5.0),
        (-23.0, -2.0, -18.0, 2.0),
        (-9.0, -0.1, -18.0, 9.0 * -1),
        (-18.0, 0.5, -18.0, -0.5),
        (-30.0, -20.0, -23.0, 7.0),
    ])
    func theGainReachesTheTargetWithinThePeak(integrated: Double, peak: Double, target: Double, gain: Double) {
        let loudness = Loudness(integrated: integrated, range: 3, truePeak: peak)
        #expect(abs(loudness.gain(towards: target) - gain) < 1e-9)
    }
}
