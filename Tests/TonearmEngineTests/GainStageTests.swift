import Foundation
import Testing
import TonearmMedia

@testable import TonearmEngine

/// The output's gain stage: bit-perfect at unity, the volume's short ramp, and the slow fade the
/// sleep timer and alarms use (linear in amplitude, a step a frame, across pieces).
@Suite("Gain stage: volume and fades")
struct GainStageTests {
    static let format = PCMFormat(sampleType: .s16, sampleRate: 1000, channels: 2)

    /// Applies the stage to `frames` frames of a constant `value`, in pieces of `piece` frames.
    private func run(_ stage: inout GainStage, frames: Int, value: Int16 = 10_000, piece: Int = 7, target: Double = 1) -> [Int16] {
        var samples = [Int16](repeating: value, count: frames * 2)
        samples.withUnsafeMutableBytes { bytes in
            var done = 0
            while done < frames {
                let count = min(piece, frames - done)
                stage.apply(to: bytes.baseAddress! + done * 4, frames: count, format: Self.format, target: target)
                done += count
            }
        }
        return samples
    }

    @Test func unityLeavesSamplesUntouched() {
        var stage = GainStage()
        #expect(run(&stage, frames: 100).allSatisfy { $0 == 10_000 })
    }

    @Test func aFadeOutIsLinearAndStaysDown() {
        var stage = GainStage()
        stage.fade(from: nil, to: 0, frames: 400)
        let out = run(&stage, frames: 500)
        for frame in 0..<500 {
            let expected = frame < 400 ? (10_000 * (1 - Double(frame + 1) / 400)).rounded() : 0
            #expect(
                abs(Double(out[frame * 2]) - expected) <= 1 && out[frame * 2] == out[frame * 2 + 1], "frame \(frame): \(out[frame * 2])")
        }
        #expect(stage.fadeLevel == 0)
    }

    @Test func aFadeInFromSilenceReachesUnityAndIsThenBitPerfect() {
        var stage = GainStage()
        stage.fade(from: 0, to: 1, frames: 100)
        let out = run(&stage, frames: 300)
        #expect(abs(Double(out[0]) - 100) <= 1, "\(out[0])")
        #expect(out[99 * 2] == 10_000 && out[299 * 2] == 10_000)
        #expect(stage.fadeLevel == 1)
    }

    @Test func aFadeOfNoFramesIsAtOnce() {
        var stage = GainStage()
        stage.fade(from: nil, to: 0, frames: 50)
        _ = run(&stage, frames: 20)
        stage.fade(from: nil, to: 1, frames: 0)
        #expect(run(&stage, frames: 10).allSatisfy { $0 == 10_000 })
    }

    /// A pause's fade: the ramp lands on silence exactly at its last frame (however the pieces
    /// fall), a resume brings it back up over as many frames, and after that the path is
    /// bit-perfect again; the sleep timer's level is untouched meanwhile.
    @Test(arguments: [1, 7, 5000])
    func aPauseMutesToSilenceAndAResumeComesBackBitPerfect(piece: Int) {
        var stage = GainStage()
        let ramp = GainStage.rampFrames(sampleRate: Self.format.sampleRate)
        stage.mute(frames: ramp)
        let down = run(&stage, frames: ramp + 10, piece: piece)
        for frame in 0..<ramp + 10 {
            let expected = frame < ramp ? (10_000 * (1 - Double(frame + 1) / Double(ramp))).rounded() : 0
            #expect(abs(Double(down[frame * 2]) - expected) <= 1, "frame \(frame): \(down[frame * 2])")
        }
        #expect(down[(ramp - 1) * 2] == 0 && stage.isMuted && stage.fadeLevel == 1)
        stage.unmute(frames: ramp)
        let up = run(&stage, frames: ramp * 3, piece: piece)
        for frame in 0..<ramp {
            #expect(abs(Double(up[frame * 2]) - (10_000 * Double(frame + 1) / Double(ramp)).rounded()) <= 1, "frame \(frame)")
        }
        #expect(up[(ramp - 1) * 2] == 10_000 && up.suffix(ramp * 4).allSatisfy { $0 == 10_000 } && !stage.isMuted)
    }

    /// A duck (the music under a ducked announcement) is a level of its own: it multiplies with
    /// the sleep timer's fade, and its end brings the music back to where that fade stands by
    /// then, not to full level.
    @Test(arguments: [1, 7, 5000])
    func aDuckAndAFadeAreSeparateLevels(piece: Int) {
        var stage = GainStage()
        stage.duck(to: 0.5, frames: 0)
        stage.fade(from: nil, to: 0, frames: 1000)
        let during = run(&stage, frames: 400, piece: piece)
        for frame in 0..<400 {
            let expected = (10_000 * 0.5 * (1 - Double(frame + 1) / 1000)).rounded()
            #expect(abs(Double(during[frame * 2]) - expected) <= 1, "frame \(frame): \(during[frame * 2])")
        }
        stage.duck(to: 1, frames: 100)
        let after = run(&stage, frames: 700, piece: piece)
        for frame in 0..<700 {
            let duck = 0.5 + 0.5 * Double(min(frame + 1, 100)) / 100
            let fade = max(0, 1 - Double(400 + frame + 1) / 1000)
            #expect(abs(Double(after[frame * 2]) - (10_000 * duck * fade).rounded()) <= 1, "frame \(frame): \(after[frame * 2])")
        }
        #expect(stage.duckLevel == 1 && stage.fadeLevel == 0 && after.suffix(200).allSatisfy { $0 == 0 })
    }

    /// The volume's ramp and a fade multiply.
    @Test func aFadeRidesOnTheVolume() {
        var stage = GainStage()
        stage.fade(from: 0.5, to: 0.5, frames: 0)
        let out = run(&stage, frames: 10, target: 0.5)
        #expect(out.allSatisfy { $0 == 2500 }, "\(out)")
    }
}
