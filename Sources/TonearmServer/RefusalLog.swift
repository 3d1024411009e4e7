import Logging
import NIOCore
import TonearmSync

/// Log lines about refused commands, for every client together: at most `linesPerWindow` a
/// minute, then one line saying the rest are left out, so a flood of clients (each logged once
/// per command) cannot fill the journal. Each client's own once-per-command rule comes first.
enum RefusalLog {
    static let linesPerWindow = 20
    static let window = TimeAmount.seconds(60)

    private struct Budget {
        var windowStart = NIODeadline.uptimeNanoseconds(0)
        var lines = 0
    }
    private static let budget = Locked(Budget())

    /// Logs `message` with `metadata` if the budget allows.
    static func warn(_ logger: Logger, _ message: Logger.Message, _ metadata: Logger.Metadata) {
        let now = NIODeadline.now()
        let verdict: Int = budget.withLock { budget in
            if now - budget.windowStart >= window { budget = Budget(windowStart: now, lines: 0) }
            budget.lines += 1
            return budget.lines <= linesPerWindow ? 1 : (budget.lines == linesPerWindow + 1 ? 0 : -1)
        }
        switch verdict {
        case 1: logger.warning(message, metadata: metadata)
        case 0: logger.warning("more refused commands; not logged for up to a minute", metadata: ["limit": "\(linesPerWindow)"])
        default: break
        }
    }
}
