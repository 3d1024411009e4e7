import CALSA
import CFFmpeg

/// Interleaved sample types the output path uses; the decoder converts everything to one of these.
public enum SampleType: String, Sendable, Equatable, CaseIterable {
    case s16, s32, float

    public var bytesPerSample: Int {
        switch self {
        case .s16: 2
        case .s32, .float: 4
        }
    }

    var avSampleFormat: AVSampleFormat {
        switch self {
        case .s16: AV_SAMPLE_FMT_S16
        case .s32: AV_SAMPLE_FMT_S32
        case .float: AV_SAMPLE_FMT_FLT
        }
    }

    var alsaFormat: snd_pcm_format_t {
        switch self {
        case .s16: SND_PCM_FORMAT_S16
        case .s32: SND_PCM_FORMAT_S32
        case .float: SND_PCM_FORMAT_FLOAT
        }
    }

    /// The nearest of our types to a decoder's native format, so that no precision is lost.
    static func nearest(to format: AVSampleFormat) -> SampleType {
        switch av_get_packed_sample_fmt(format) {
        case AV_SAMPLE_FMT_U8, AV_SAMPLE_FMT_S16: .s16
        case AV_SAMPLE_FMT_S32: .s32
        default: .float
        }
    }
}

/// The PCM format of one stream of interleaved frames.
public struct PCMFormat: Sendable, Hashable, CustomStringConvertible {
    public var sampleType: SampleType
    public var sampleRate: Int
    public var channels: Int

    public init(sampleType: SampleType, sampleRate: Int, channels: Int) {
        self.sampleType = sampleType
        self.sampleRate = sampleRate
        self.channels = channels
    }

    public var bytesPerFrame: Int { sampleType.bytesPerSample * channels }
    public var description: String { "\(sampleType.rawValue) \(sampleRate) Hz \(channels) ch" }
}
