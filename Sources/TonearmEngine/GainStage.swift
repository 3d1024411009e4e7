import Foundation
import TonearmMedia

/// Software volume and ReplayGain, applied by the output thread to each piece just before it is
/// written, in place (the chunk is the output thread's while it is the pipe's head). A change
/// ramps over about 5 ms so it never clicks. At a gain of exactly 1 the samples are not touched:
/// the path stays bit-perfect. No allocation.
struct GainStage {
    /// The gain applied to the last frame written.
    private(set) var current: Double = 1
    /// Set when sound starts anew (play, resume, a new run; the output thread's `startConsuming`,
    /// like every field here: the stage is `OutputState.gain`, the output thread's alone): nothing is heard to ramp from, so
    /// the first frame is already at the target. A volume set while stopped or paused is then in
    /// force from the first sample instead of ramping down from the level before it.
    private var settles = true
    /// A slow fade on top of the volume (the sleep timer's fade-out, an alarm's fade-in): a factor
    /// that moves linearly, a step a frame, to `fadeTarget`, and stays there.
    private(set) var fadeLevel: Double = 1
    private var fadeTarget: Double = 1
    private var fadeStep: Double = 0

    mutating func settle() { settles = true }

    /// Fades from `from` (nil: the level now) to `target` over `frames` frames (0: at once).
    mutating func fade(from: Double?, to target: Double, frames: Int) {
        if let from { fadeLevel = from }
        fadeTarget = target
        fadeStep = frames > 0 ? (target - fadeLevel) / Double(frames) : 0
        if frames <= 0 { fadeLevel = target }
    }

    static func factor(decibels: Double) -> Double {
        decibels == 0 ? 1 : pow(10, decibels / 20)
    }

    mutating func apply(to pointer: UnsafeMutableRawPointer, frames: Int, format: PCMFormat, target: Double) {
        if settles {
            current = target
            settles = false
        }
        if current == target && target == 1 && fadeLevel == 1 && fadeTarget == 1 { return }
        let channels = format.channels
        let rampFrames = max(1, format.sampleRate / 200)
        let step = (target - current) / Double(rampFrames)
        var gain = current
        var fade = fadeLevel
        let fadeTarget = fadeTarget, fadeStep = fadeStep
        func nextGain() -> Double {
            if gain != target {
                gain += step
                if (step > 0 && gain > target) || (step < 0 && gain < target) { gain = target }
            }
            if fade != fadeTarget {
                fade += fadeStep
                if (fadeStep >= 0 && fade > fadeTarget) || (fadeStep <= 0 && fade < fadeTarget) { fade = fadeTarget }
            }
            return gain * fade
        }
        switch format.sampleType {
        case .s16: Self.scale(Int16.self, pointer, frames: frames, channels: channels, nextGain)
        case .s32: Self.scale(Int32.self, pointer, frames: frames, channels: channels, nextGain)
        case .float:
            let samples = pointer.assumingMemoryBound(to: Float.self)
            for frame in 0..<frames {
                let g = Float(nextGain())
                for channel in 0..<channels { samples[frame * channels + channel] *= g }
            }
        }
        current = gain
        fadeLevel = fade
    }

    /// Scales integer samples, rounding and clamping at full scale.
    private static func scale<Sample: FixedWidthInteger & SignedInteger>(
        _ type: Sample.Type, _ pointer: UnsafeMutableRawPointer, frames: Int, channels: Int, _ nextGain: () -> Double
    ) {
        let samples = pointer.assumingMemoryBound(to: Sample.self)
        for frame in 0..<frames {
            let g = nextGain()
            for channel in 0..<channels {
                let index = frame * channels + channel
                let scaled = (Double(samples[index]) * g).rounded()
                samples[index] = scaled >= Double(Sample.max) ? .max : scaled <= Double(Sample.min) ? .min : Sample(scaled)
            }
        }
    }
}
