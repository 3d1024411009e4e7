import Foundation
import TonearmEngine
import TonearmSync

/// One long-lived thread for blocking work the MPD front-end hands it in order: reading
/// directories and tags for `lsinfo`, `listall`, `add` of a directory. File I/O never runs on the
/// event loop or the cooperative pool. The thread sleeps on a condition while there is no work.
final class BlockingWorker: Sendable {
    private let thread: JobThread

    init(name: String) { thread = JobThread(name: name) }

    deinit { thread.finish() }

    /// Runs `job` on the worker's thread and returns its result.
    func run<T: Sendable>(_ job: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            thread.async { continuation.resume(returning: job()) }
        }
    }

    func shutdown() { thread.finish() }
}
