import CALSA
import CFFmpeg
import TonearmMedia

/// A sample type as FFmpeg and ALSA name it.
extension SampleType {
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
