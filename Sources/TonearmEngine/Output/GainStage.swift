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
    /// A slow fade on top of the volume (the sleep timer's fade-out, an alarm's fade-in).
    private var fade = LinearRamp()
    /// The music lowered under a ducked announcement: a level of its own, so that the duck's
    /// end brings back whatever the fade stands at, not full level.
    private var ducking = LinearRamp()
    /// The pause's few milliseconds: down to silence before the device pauses, up again on
    /// resume, so neither clicks (`mute`, `unmute`).
    private var muting = LinearRamp()

    var fadeLevel: Double { fade.level }
    var duckLevel: Double { ducking.level }
    /// Whether the fade's last frame was scaled (it stands at its target from now on).
    var fadeIsSettled: Bool { fade.isSettled }
    /// Whether a pause's fade (`mute`) brought the level down, all the way or part of it, and
    /// nothing brought it back up since.
    var isMuted: Bool { !muting.isUnity }
    /// Whether the last frame scaled was silenced by a pause's fade, and stays so.
    var isSilenced: Bool { muting.level == 0 && muting.target == 0 }

    mutating func settle() { settles = true }

    /// Fades from `from` (nil: the level now) to `target` over `frames` frames (0: at once).
    mutating func fade(from: Double?, to target: Double, frames: Int) {
        fade.move(from: from, to: target, frames: frames)
    }

    /// Moves the duck's level to `target` over `frames` frames (0: at once).
    mutating func duck(to target: Double, frames: Int) {
        ducking.move(from: nil, to: target, frames: frames)
    }

    /// Brings the next `frames` frames down to silence (a pause's fade-out).
    mutating func mute(frames: Int) { muting.move(from: nil, to: 0, frames: frames) }

    /// Brings the next `frames` frames up from where the muting stands to full (a resume); 0: at once.
    mutating func unmute(frames: Int) { muting.move(from: nil, to: 1, frames: frames) }

    /// A volume change's ramp, and a pause's fade each way: 5 ms.
    static func rampFrames(sampleRate: Int) -> Int { max(1, sampleRate / 200) }

    static func factor(decibels: Double) -> Double {
        decibels == 0 ? 1 : pow(10, decibels / 20)
    }

    mutating func apply(to pointer: UnsafeMutableRawPointer, frames: Int, format: PCMFormat, target: Double) {
        if settles {
            current = target
            settles = false
        }
        if current == target && target == 1 && fade.isUnity && ducking.isUnity && muting.isUnity { return }
        let channels = format.channels
        let rampFrames = Self.rampFrames(sampleRate: format.sampleRate)
        let step = (target - current) / Double(rampFrames)
        var gain = current
        var fade = fade
        var ducking = ducking
        var muting = muting
        func nextGain() -> Double {
            if gain != target {
                gain += step
                if (step > 0 && gain > target) || (step < 0 && gain < target) { gain = target }
            }
            return gain * fade.next() * ducking.next() * muting.next()
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
        self.fade = fade
        self.ducking = ducking
        self.muting = muting
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

/// A factor that moves linearly, a step a frame, to `target`, lands on it exactly, and stays there.
struct LinearRamp {
    private(set) var level: Double = 1
    private(set) var target: Double = 1
    private var step: Double = 0
    private var remaining = 0

    var isUnity: Bool { level == 1 && target == 1 }
    var isSettled: Bool { remaining == 0 }

    /// From `from` (nil: the level now) to `target` over `frames` frames (0: at once).
    mutating func move(from: Double?, to target: Double, frames: Int) {
        if let from { level = from }
        self.target = target
        remaining = max(0, frames)
        step = frames > 0 ? (target - level) / Double(frames) : 0
        if frames <= 0 { level = target }
    }

    /// The level for the next frame.
    mutating func next() -> Double {
        guard remaining > 0 else { return level }
        remaining -= 1
        level = remaining == 0 ? target : level + step
        return level
    }
}
