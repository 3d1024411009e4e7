import CALSA
import CFFmpeg

extension PlayerEngine {
    /// The versions of the C libraries actually loaded, for `version` and bug reports.
    package static var libraryVersions: [String: String] {
        func dotted(_ version: UInt32) -> String { "\(version >> 16).\((version >> 8) & 0xff).\(version & 0xff)" }
        return [
            "ffmpeg": String(cString: av_version_info()),
            "libavformat": dotted(avformat_version()),
            "libavcodec": dotted(avcodec_version()),
            "libswresample": dotted(swresample_version()),
            "alsa": String(cString: snd_asoundlib_version()),
        ]
    }
}
