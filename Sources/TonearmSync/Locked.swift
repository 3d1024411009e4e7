import Foundation

/// A value guarded by a lock, with the shape of `Synchronization.Mutex.withLock`.
///
/// Why not `Mutex`: on Linux it locks with a futex inside the uninstrumented Synchronization
/// library, so ThreadSanitizer sees none of its ordering and reports every access under it as
/// a race (a two-thread counter under `Mutex` is enough to show it). This one locks a pthread
/// mutex (through `NSLock`), which ThreadSanitizer understands, so its reports mean something.
///
/// `@unchecked Sendable`: `value` is only ever touched inside `withLock`, with `lock` held.
package final class Locked<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    package init(_ value: Value) { self.value = value }

    /// Runs `body` with the lock held. Keep it short and never block or await in it.
    @inlinable
    package func withLock<Result, E: Error>(_ body: (inout Value) throws(E) -> Result) throws(E) -> Result {
        try withLockedValue(body)
    }

    @usableFromInline
    func withLockedValue<Result, E: Error>(_ body: (inout Value) throws(E) -> Result) throws(E) -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
