import CFFmpeg

enum FFmpegError {
    /// FFmpeg's own text for an error code (what `av_err2str` gives in C).
    static func describe(_ code: Int32) -> String {
        let size = tonearm_av_error_max_string_size()
        return withUnsafeTemporaryAllocation(of: CChar.self, capacity: size) { buffer in
            String(cString: tonearm_av_error_string(code, buffer.baseAddress!, size))
        }
    }
}
