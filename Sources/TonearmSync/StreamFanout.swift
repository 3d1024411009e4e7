import Foundation

/// Fans values out to any number of `AsyncStream` continuations, in one order for all of them.
///
/// Two locks, because yielding and unsubscribing take each other's locks in opposite order:
/// `yield` on a continuation takes the lock of the task waiting on it (to resume it), while
/// cancelling that task holds the same task lock and runs the stream's `onTermination`, which
/// unsubscribes. With one lock for both jobs the daemon deadlocked when a client disconnected
/// while a transition was being published. So:
/// - `members` guards the set of continuations and is a leaf: nothing else is locked, and no
///   continuation is touched, while it is held. `onTermination` takes only this one.
/// - `delivery` is held while yielding, so concurrent `yield`s reach every subscriber in the
///   same order. It is never taken by `onTermination`.
/// Lock order: (a caller's lock) → `delivery` → `members`; `delivery` → a task's lock → `members`.
package final class StreamFanout<Element: Sendable>: Sendable {
    private struct Members {
        var nextID: UInt64 = 0
        var continuations: [UInt64: AsyncStream<Element>.Continuation] = [:]
    }

    private let members = Locked(Members())
    /// A bare lock, not a `Locked<Void>`: ThreadSanitizer places a zero-sized value's accesses on
    /// the object's first word and reports them against the unlocked read of the lock itself.
    private let delivery = NSLock()
    private let bufferingPolicy: AsyncStream<Element>.Continuation.BufferingPolicy

    package init(bufferingPolicy: AsyncStream<Element>.Continuation.BufferingPolicy = .unbounded) {
        self.bufferingPolicy = bufferingPolicy
    }

    /// A new subscriber's stream. `first`, when given, is yielded before anything else, with
    /// `delivery` held: a caller that yields under its own lock and passes its current value here
    /// under that same lock gives the subscriber the current value and then every later one, with
    /// no gap and no repeat.
    package func subscribe(first: Element? = nil) -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream<Element>.makeStream(bufferingPolicy: bufferingPolicy)
        delivery.lock()
        if let first { continuation.yield(first) }
        let id = members.withLock { members in
            defer { members.nextID += 1 }
            members.continuations[members.nextID] = continuation
            return members.nextID
        }
        delivery.unlock()
        continuation.onTermination = { [weak self] _ in
            self?.members.withLock { _ = $0.continuations.removeValue(forKey: id) }
        }
        return stream
    }

    package func yield(_ value: Element) {
        delivery.lock()
        defer { delivery.unlock() }
        let current = members.withLock { Array($0.continuations.values) }
        for continuation in current { continuation.yield(value) }
    }
}
