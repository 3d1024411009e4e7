import CLinux
import Foundation

/// The daemon's own threads (the engine's, the tag reader, the state keeper, the concurrency
/// executors): each started with a name that `top -H`, `perf` and /proc show. Foundation's
/// `Thread.name` does not reach the kernel here, so it is set from inside the thread.
package enum NamedThread {
    package static func start(_ name: String, _ body: @escaping @Sendable () -> Void) {
        let thread = Thread {
            _ = tonearm_name_current_thread(name)
            body()
        }
        thread.name = name
        thread.start()
    }

    /// Lowers the calling thread to idle CPU and I/O priority: it runs only when nothing else
    /// wants the CPU or the disk. False when the kernel refused.
    @discardableResult
    package static func lowerToIdlePriority() -> Bool { tonearm_idle_priority_current_thread() == 0 }
}
