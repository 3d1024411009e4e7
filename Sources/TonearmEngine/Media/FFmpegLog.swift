import CFFmpeg
import Foundation
import Glibc
import TonearmSync

/// FFmpeg's own error messages, rate-limited. A damaged file makes a decoder complain once per
/// packet (thousands of "Header missing" lines a second), which would flood the journal of a
/// box nobody looks at; the failures that matter reach clients as `failed` reasons anyway.
enum FFmpegLog {
    private static let budget = Locked(RateBudget(limit: 20, window: 10))

    /// The threads watching for what FFmpeg's tls protocol says while they open a connection,
    /// and what it said (its error lines are the only place a failed verification is told
    /// apart from any other EIO).
    private static let tlsWatch = Locked<[UInt: String?]>([:])

    static func beginWatchingTLS() {
        _ = install
        tlsWatch.withLock { $0[UInt(pthread_self())] = .some(nil) }
    }

    /// What the tls protocol complained of on this thread since `beginWatchingTLS`, if anything.
    static func endWatchingTLS() -> String? {
        tlsWatch.withLock { $0.removeValue(forKey: UInt(pthread_self())) ?? nil } ?? nil
    }

    private static func noteTLSComplaint(_ context: UnsafeMutableRawPointer?, _ formatted: UnsafePointer<CChar>) {
        // A protocol logs through its URLContext, whose item name is the protocol's ("tls").
        guard let context, let itemClass = context.load(as: UnsafePointer<AVClass>?.self),
            let itemName = itemClass.pointee.item_name, let name = itemName(context), strcmp(name, "tls") == 0
        else { return }
        let thread = UInt(pthread_self())
        let line = String(cString: formatted)
        // "[tls @ 0x…] Peer certificate failed verification": the words after the prefix.
        let words = line.range(of: "] ").map { String(line[$0.upperBound...]) } ?? line
        let message = words.trimmingCharacters(in: .whitespacesAndNewlines)
        // Only what verification says ("Peer certificate failed verification", "The
        // certificate's owner does not match hostname …"), not a reset or an early end.
        guard message.localizedCaseInsensitiveContains("certificate") else { return }
        tlsWatch.withLock { watch in
            if let noted = watch[thread], noted == nil { watch[thread] = .some(message) }
        }
    }

    /// Installs the callback once; FFmpeg may call it from any of its threads. FFmpeg hands it
    /// every line, whatever `av_log_set_level` says: http's "request:" debug line goes to the
    /// request gate. An error line is formatted once (its argument list can be read only once),
    /// then noted if the tls protocol said it to a thread watching, and written to stderr within
    /// the budget.
    static let install: Void = {
        av_log_set_level(AV_LOG_ERROR)
        av_log_set_callback { context, level, format, arguments in
            guard let format else { return }
            // http's line just before it writes a request: the request gate's moment.
            if level == AV_LOG_DEBUG, let context, strncmp(format, "request: ", 9) == 0 {
                RequestGate.requestAboutToBeSent(by: context)
                return
            }
            guard level <= AV_LOG_ERROR, let arguments else { return }
            withUnsafeTemporaryAllocation(of: CChar.self, capacity: 1024) { line in
                var prefix: Int32 = 1
                av_log_format_line2(context, level, format, arguments, line.baseAddress, 1024, &prefix)
                FFmpegLog.noteTLSComplaint(context, line.baseAddress!)
                FFmpegLog.write(line.baseAddress!)
            }
        }
    }()

    /// Writes one formatted line to stderr, within the budget.
    private static func write(_ line: UnsafePointer<CChar>) {
        let now = EngineLock.now()
        switch budget.withLock({ $0.admit(at: now) }) {
        case .admitted:
            _ = Glibc.write(2, line, strlen(line))
        case .firstLeftOut:
            let notice = "(further FFmpeg messages suppressed for up to \(Int(budget.withLock { $0.window })) s)\n"
            _ = notice.withCString { Glibc.write(2, $0, strlen($0)) }
        case .leftOut:
            break
        }
    }

}
