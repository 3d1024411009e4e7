import CEBUR128
import Foundation
import TonearmMedia

/// An EBU R128 meter (libebur128) fed interleaved PCM: integrated loudness, loudness range and
/// true peak of everything it was given (`whole`), or the short-term loudness of its last 3 s
/// (`shortTerm`). One owner, one thread: the meter is a C state that is not safe to share.
final class LoudnessMeter {
    enum Mode {
        /// Integrated loudness, range and true peak: an item's loudness.
        case whole
        /// Short-term loudness only (cheap: no true-peak oversampling): a live stream's level.
        case shortTerm
    }

    private let state: UnsafeMutablePointer<ebur128_state>
    let channels: Int

    /// Nil when libebur128 refuses the format (no channels, a rate it cannot filter).
    init?(channels: Int, sampleRate: Int, mode: Mode = .whole) {
        let flags =
            switch mode {
            case .whole: EBUR128_MODE_I.rawValue | EBUR128_MODE_LRA.rawValue | EBUR128_MODE_TRUE_PEAK.rawValue
            case .shortTerm: EBUR128_MODE_S.rawValue
            }
        guard channels > 0, sampleRate > 0,
            let state = ebur128_init(UInt32(channels), UInt(sampleRate), Int32(flags))
        else { return nil }
        self.state = state
        self.channels = channels
    }

    deinit {
        var state: UnsafeMutablePointer<ebur128_state>? = state
        ebur128_destroy(&state)
    }

    /// Adds `frames` frames of interleaved float samples.
    func add(_ samples: UnsafePointer<Float>, frames: Int) {
        _ = ebur128_add_frames_float(state, samples, frames)
    }

    /// Adds `frames` frames of interleaved samples of `type`. No allocation.
    func add(_ samples: UnsafeRawPointer, type: SampleType, frames: Int) {
        switch type {
        case .s16: _ = ebur128_add_frames_short(state, samples.assumingMemoryBound(to: Int16.self), frames)
        case .s32: _ = ebur128_add_frames_int(state, samples.assumingMemoryBound(to: Int32.self), frames)
        case .float: _ = ebur128_add_frames_float(state, samples.assumingMemoryBound(to: Float.self), frames)
        }
    }

    /// The loudness of the last 3 s, LUFS (−∞ for silence).
    func shortTerm() -> Double {
        var loudness = -Double.infinity
        _ = ebur128_loudness_shortterm(state, &loudness)
        return loudness
    }

    /// What was measured; nil for silence (no block above the gate) or a failure.
    func result() -> Loudness? {
        var integrated = 0.0
        var range = 0.0
        guard ebur128_loudness_global(state, &integrated) == EBUR128_SUCCESS.rawValue, integrated.isFinite,
            ebur128_loudness_range(state, &range) == EBUR128_SUCCESS.rawValue
        else { return nil }
        var peak = 0.0
        for channel in 0..<channels {
            var channelPeak = 0.0
            guard ebur128_true_peak(state, UInt32(channel), &channelPeak) == EBUR128_SUCCESS.rawValue else { return nil }
            peak = max(peak, channelPeak)
        }
        // libebur128 gives the peak as a linear factor of full scale.
        let truePeak = peak > 0 ? 20 * log10(peak) : -Double.infinity
        return Loudness(integrated: integrated, range: range.isFinite ? range : 0, truePeak: truePeak)
    }
}
