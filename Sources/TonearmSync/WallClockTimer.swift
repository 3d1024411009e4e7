import Foundation

/// Runs actions at wall-clock moments (a sleep timer, alarms) on a thread of its own
/// (`tonearm-timer`), with one wait armed for the earliest moment and none when nothing is due:
/// an idle daemon with alarms set makes no wake-ups. The wait is on the real-time clock
/// (`NSCondition.wait(until:)`, an absolute deadline), so a clock set forward or back (NTP at
/// boot on a board without a battery-backed clock) moves the moment with it. A moment past
/// `latest` (year 2200) is never reached: it is waited for with no deadline, as nothing due, since
/// `NSCondition.wait(until:)` turns its deadline into Int64 nanoseconds since 1970 and traps past
/// 2262 (`Date.distantFuture` included).
///
/// `@unchecked Sendable`: `due` and `finishing` are read and written only with `condition`
/// locked; the actions are Sendable and run on the timer thread with nothing locked.
package final class WallClockTimer<Key: Hashable & Sendable>: @unchecked Sendable {
    private let condition = NSCondition()
    private var due: [Key: (at: Date, action: @Sendable () -> Void)] = [:]
    private var finishing = false
    /// Moments after this are waited for as never (see above).
    package static var latest: Date { Date(timeIntervalSince1970: 7_258_118_400) }  // 2200-01-01T00:00:00Z

    package init(name: String = "tonearm-timer") {
        NamedThread.start(name) { [self] in run() }
    }

    /// Runs `action` at `date` (at once if it has passed), replacing what `key` had.
    package func schedule(_ key: Key, at date: Date, _ action: @escaping @Sendable () -> Void) {
        condition.lock()
        due[key] = (date, action)
        condition.signal()
        condition.unlock()
    }

    package func cancel(_ key: Key) {
        condition.lock()
        due[key] = nil
        condition.signal()
        condition.unlock()
    }

    /// When `key` is due, if it is scheduled.
    package func moment(of key: Key) -> Date? {
        condition.lock()
        defer { condition.unlock() }
        return due[key]?.at
    }

    /// Ends the thread; nothing scheduled runs after.
    package func finish() {
        condition.lock()
        finishing = true
        due.removeAll()
        condition.signal()
        condition.unlock()
    }

    private func run() {
        condition.lock()
        while !finishing {
            guard let earliest = due.min(by: { $0.value.at < $1.value.at }) else {
                condition.wait()
                continue
            }
            if earliest.value.at >= Self.latest {
                condition.wait()
                continue
            }
            if earliest.value.at > Date() {
                _ = condition.wait(until: earliest.value.at)
                continue
            }
            due[earliest.key] = nil
            condition.unlock()
            earliest.value.action()
            condition.lock()
        }
        condition.unlock()
    }
}
