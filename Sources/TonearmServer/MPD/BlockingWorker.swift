import Foundation
import TonearmEngine

/// One long-lived thread for blocking work the MPD front-end hands it in order: reading
/// directories and tags for `lsinfo`, `listall`, `add` of a directory. File I/O never runs on the
/// event loop or the cooperative pool. The thread sleeps on a condition while there is no work.
final class BlockingWorker: Sendable {
    private let work = Work()

    init(name: String) {
        let work = self.work
        PlayerEngine.startThread(named: name) { while work.step() {} }
    }

    deinit { work.shutdown() }

    /// Runs `job` on the worker's thread and returns its result.
    func run<T: Sendable>(_ job: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            work.enqueue { continuation.resume(returning: job()) }
        }
    }

    func shutdown() { work.shutdown() }

    /// What the thread and its callers share. `@unchecked Sendable`: `jobs` and `shuttingDown`
    /// are guarded by `condition`.
    private final class Work: @unchecked Sendable {
        let condition = NSCondition()
        var jobs: [@Sendable () -> Void] = []
        var shuttingDown = false

        func enqueue(_ job: @escaping @Sendable () -> Void) {
            condition.lock()
            guard !shuttingDown else {
                condition.unlock()
                // After shutdown nobody would run it: run it here, so no caller waits for ever.
                job()
                return
            }
            jobs.append(job)
            condition.signal()
            condition.unlock()
        }

        func shutdown() {
            condition.lock()
            shuttingDown = true
            condition.signal()
            condition.unlock()
        }

        /// Runs one job, sleeping until there is one; false once shut down and drained.
        func step() -> Bool {
            condition.lock()
            while jobs.isEmpty && !shuttingDown { condition.wait() }
            guard !jobs.isEmpty else {
                condition.unlock()
                return false
            }
            let job = jobs.removeFirst()
            condition.unlock()
            job()
            return true
        }
    }
}
