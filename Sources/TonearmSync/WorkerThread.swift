import Foundation

/// A serial queue of work items on a thread of its own: items are performed one at a time in the
/// order they were given, and the thread sleeps on its condition (no timeout) when there is
/// nothing to do. The queue's two arrays keep the capacity they grew to, so giving an item
/// allocates nothing once the queue has been as long before: the engine's observer deliveries
/// (`tonearm-events`) are typed values given from the output thread, where nothing may allocate.
/// `JobThread` is the closure form: `tonearm-open` opens devices on one, and the MPD front-end's
/// `BlockingWorker` reads directories and tags on one. A `DispatchQueue` did the deliveries on
/// libdispatch's worker threads, which come and go with the load, and a thread was started for
/// every device open; these live as long as their owner, so the daemon's thread count holds
/// still over any number of loads.
///
/// `@unchecked Sendable`: `pending`, `finishing` and `sleeping` are touched only with `condition` locked;
/// `batch` belongs to the worker thread alone; `perform` is immutable and Sendable.
package final class WorkerThread<Item: Sendable>: @unchecked Sendable {
    private let condition = NSCondition()
    private var pending: [Item] = []
    private var finishing = false
    /// The worker thread waits on `condition` (guarded by it): only then does a new item signal.
    private var sleeping = false
    private let perform: @Sendable (Item) -> Void

    package init(name: String, perform: @escaping @Sendable (Item) -> Void) {
        self.perform = perform
        NamedThread.start(name) { [self] in run() }
    }

    /// Queues `item` behind every item queued before it (any thread). After `finish` nobody
    /// would perform it, so it is performed here, on the caller's thread: no caller waits for ever.
    package func enqueue(_ item: Item) {
        condition.lock()
        guard !finishing else {
            condition.unlock()
            perform(item)
            return
        }
        pending.append(item)
        let wake = sleeping
        sleeping = false
        condition.unlock()
        // Signalled after unlocking: woken while the lock was still held, the worker could be
        // scheduled at once on this vCPU only to block on the lock and switch straight back.
        if wake { condition.signal() }
    }

    /// Performs what is queued, then ends the thread; later items are performed on their caller's thread.
    package func finish() {
        condition.lock()
        finishing = true
        condition.signal()
        condition.unlock()
    }

    private func run() {
        // Swapped with `pending` so that neither array is reallocated once both have grown.
        var batch: [Item] = []
        condition.lock()
        while true {
            while pending.isEmpty && !finishing {
                sleeping = true
                condition.wait()
            }
            sleeping = false
            if pending.isEmpty { break }
            swap(&batch, &pending)
            condition.unlock()
            for item in batch { perform(item) }
            batch.removeAll(keepingCapacity: true)
            condition.lock()
        }
        condition.unlock()
    }
}

/// A `WorkerThread` of closures: each job is run as it comes.
package typealias JobThread = WorkerThread<@Sendable () -> Void>

extension WorkerThread where Item == @Sendable () -> Void {
    package convenience init(name: String) {
        self.init(name: name) { job in job() }
    }

    package func async(_ job: @escaping @Sendable () -> Void) { enqueue(job) }
}
