import Foundation
import Logging
import TonearmSync

/// Log lines about refused commands, for every client together: at most 20 a minute, then one
/// line saying the rest are left out, so a flood of clients (each logged once per command)
/// cannot fill the journal. Each client's own once-per-command rule comes first.
package enum RefusalLog {
    private static let budget = Locked(RateBudget(limit: 20, window: 60))

    /// Logs `message` with `metadata` if the budget allows.
    package static func warn(_ logger: Logger, _ message: Logger.Message, _ metadata: Logger.Metadata) {
        let now = ProcessInfo.processInfo.systemUptime
        switch budget.withLock({ $0.admit(at: now) }) {
        case .admitted: logger.warning(message, metadata: metadata)
        case .firstLeftOut: logger.warning("more refused commands; not logged for up to a minute", metadata: ["limit": "20"])
        case .leftOut: break
        }
    }
}
