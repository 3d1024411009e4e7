import CFFmpeg
import Glibc
import TonearmSync

/// FFmpeg's own error messages, rate-limited. A damaged file makes a decoder complain once per
/// packet (thousands of "Header missing" lines a second), which would flood the journal of a
/// box nobody looks at; the failures that matter reach clients as `failed` reasons anyway.
enum FFmpegLog {
    private static let window = 10.0
    private static let linesPerWindow = 20
    private struct Budget {
        var windowStart = 0.0
        var lines = 0
    }
    private static let budget = Locked(Budget())

    /// Installs the callback once; FFmpeg may call it from any of its threads.
    static let install: Void = {
        av_log_set_level(AV_LOG_ERROR)
        av_log_set_callback { context, level, format, arguments in
            guard level <= AV_LOG_ERROR, let format, let arguments else { return }
            let now = EngineLock.now()
            let verdict: Int = FFmpegLog.budget.withLock { budget in
                if now - budget.windowStart >= FFmpegLog.window { budget = Budget(windowStart: now, lines: 0) }
                budget.lines += 1
                return budget.lines <= FFmpegLog.linesPerWindow ? 1 : (budget.lines == FFmpegLog.linesPerWindow + 1 ? 0 : -1)
            }
            guard verdict >= 0 else { return }
            if verdict == 0 {
                let notice = "(further FFmpeg messages suppressed for up to \(Int(FFmpegLog.window)) s)\n"
                _ = notice.withCString { write(2, $0, strlen($0)) }
                return
            }
            withUnsafeTemporaryAllocation(of: CChar.self, capacity: 1024) { line in
                var prefix: Int32 = 1
                av_log_format_line2(context, level, format, arguments, line.baseAddress, 1024, &prefix)
                _ = write(2, line.baseAddress, strlen(line.baseAddress!))
            }
        }
    }()
}
