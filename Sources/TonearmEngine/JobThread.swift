import Foundation

/// A serial queue on a thread of its own: jobs run one at a time in the order they were given,
/// and the thread sleeps on its condition (no timeout) when there is nothing to run. The engine
/// has two: `tonearm-events` delivers observer callbacks, `tonearm-open` opens devices; the MPD
/// front-end's `BlockingWorker` reads directories and tags on one. A
/// `DispatchQueue` did the first on libdispatch's worker threads, which come and go with the
/// load, and a thread was started for every device open; these live as long as the engine, so
/// the daemon's thread count holds still over any number of loads.
///
/// `@unchecked Sendable`: `pending` and `finishing` are touched only with `condition` locked;
/// `batch` belongs to the job thread alone.
public final class JobThread: @unchecked Sendable {
    private let condition = NSCondition()
    private var pending: [@Sendable () -> Void] = []
    private var finishing = false

    public init(name: String) {
        EngineControl.startThread(named: name) { [self] in run() }
    }

    /// Queues `job` behind every job queued before it (any thread). After `finish` nobody would
    /// run it, so it runs here, on the caller's thread: no caller waits for ever.
    public func async(_ job: @escaping @Sendable () -> Void) {
        condition.lock()
        guard !finishing else {
            condition.unlock()
            job()
            return
        }
        pending.append(job)
        condition.signal()
        condition.unlock()
    }

    /// Runs what is queued, then ends the thread; later jobs run on their caller's thread.
    public func finish() {
        condition.lock()
        finishing = true
        condition.signal()
        condition.unlock()
    }

    private func run() {
        // Swapped with `pending` so that neither array is reallocated once both have grown.
        var batch: [@Sendable () -> Void] = []
        condition.lock()
        while true {
            while pending.isEmpty && !finishing { condition.wait() }
            if pending.isEmpty { break }
            swap(&batch, &pending)
            condition.unlock()
            for job in batch { job() }
            batch.removeAll(keepingCapacity: true)
            condition.lock()
        }
        condition.unlock()
    }
}
