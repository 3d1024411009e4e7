import CFFmpeg
import Foundation
import Synchronization
import TonearmMedia

/// Lets a decoder thread abandon blocking FFmpeg I/O (open, probe, read) when its item is replaced.
/// Also bounds a network open: FFmpeg's read timeout stops a silent server, not one that talks
/// without end (endless headers), so an open gives up at a deadline as well.
final class CancellationFlag: Sendable {
    private let flag = Atomic<Bool>(false)
    /// Monotonic nanoseconds after which blocking I/O gives up; 0: no deadline.
    private let deadline = Atomic<UInt64>(0)
    /// A deadline no later one may pass (a reconnect window's end); 0: none.
    private let cap = Atomic<UInt64>(0)
    /// Set once a request FFmpeg was about to send was refused (`RequestGate`): from then on
    /// every wait is interrupted, and the item fails with `refusal`. Never reset.
    private let refused = Atomic<Bool>(false)
    private let refusalReason = Mutex<String?>(nil)
    func cancel() { flag.store(true, ordering: .relaxed) }
    /// Makes the flag usable again for the same decoder's next piece of work (a seek).
    func reset() { flag.store(false, ordering: .relaxed) }
    var isCancelled: Bool { flag.load(ordering: .relaxed) }

    func setDeadline(secondsFromNow seconds: Double?) {
        let limit = cap.load(ordering: .relaxed)
        var at = seconds.map { Self.nanosecondsNow() + UInt64(max(0, $0) * 1e9) } ?? limit
        if limit != 0 { at = min(at, limit) }
        deadline.store(at, ordering: .relaxed)
    }

    /// Every deadline from now on ends `seconds` from now at the latest, and so does the
    /// blocking I/O of work that has none of its own.
    func capDeadlines(secondsFromNow seconds: Double) {
        let at = Self.nanosecondsNow() + UInt64(max(0, seconds) * 1e9)
        cap.store(at, ordering: .relaxed)
        deadline.store(at, ordering: .relaxed)
    }

    /// The work under the cap is done (a reconnect succeeded): deadlines are its own again.
    func uncap() {
        cap.store(0, ordering: .relaxed)
        deadline.store(0, ordering: .relaxed)
    }

    func refuse(_ reason: String) {
        refusalReason.withLock { if $0 == nil { $0 = reason } }
        refused.store(true, ordering: .relaxed)
    }

    /// Why a request was refused, if one was.
    var refusal: String? { refused.load(ordering: .relaxed) ? refusalReason.withLock { $0 } : nil }

    /// Whether I/O must stop now: cancelled, a request refused, or past the deadline.
    var shouldInterrupt: Bool {
        if isCancelled || refused.load(ordering: .relaxed) { return true }
        let limit = deadline.load(ordering: .relaxed)
        return limit != 0 && Self.nanosecondsNow() > limit
    }

    private static func nanosecondsNow() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }
}
