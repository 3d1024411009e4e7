import Foundation
import TonearmSync

/// One long-lived thread for work that must not run on an event loop or the cooperative pool,
/// done in the order it is handed in: the MPD library's directory and tag reads (`lsinfo`,
/// `listall`, `add` of a directory), and the encoding of long replies (`LongReplies`). The
/// thread sleeps on a condition while there is no work.
package final class BlockingWorker: Sendable {
    private let thread: JobThread

    package init(name: String) { thread = JobThread(name: name) }

    deinit { thread.finish() }

    /// Runs `job` on the worker's thread and returns its result, or throws its error.
    package func run<T: Sendable, E: Error>(_ job: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        let result: Result<T, E> = await withCheckedContinuation { continuation in
            thread.async {
                do throws(E) { continuation.resume(returning: .success(try job())) } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        return try result.get()
    }

    package func shutdown() { thread.finish() }
}
