import TonearmEngine
import TonearmSync
@_spi(ExperimentalCustomExecutors) @_spi(ExperimentalScheduling) import _Concurrency

#if canImport(Glibc)
    import Glibc
#endif

/// Swift concurrency's executors for the daemon: the main thread as the main executor, and two
/// threads of our own as the default (global) executor, both with timers for `Task.sleep`.
///
/// Why by hand: on Linux the default executors are libdispatch's, and the first dispatch worker
/// thread arms a 1 s repeating timer (`_dispatch_workq_monitor_pools`) that is never disarmed, so
/// an idle or paused daemon woke once a second (docs/performance.md). These threads sleep on a
/// condition variable with no timeout while nothing is due, so an idle daemon makes no wake-up.
/// The compiler installs them (`swift_createExecutors` at the start of the async `main`) because
/// this module names them `DefaultExecutorFactory`; this needs `-disable-availability-checking`
/// (Package.swift), and it is Swift 6.3's experimental SPI: check it again with each new Swift.
typealias DefaultExecutorFactory = DaemonExecutors

struct DaemonExecutors: ExecutorFactory {
    static let main = JobLoop(threads: 0)
    static let pool = JobLoop(threads: 2)
    static var mainExecutor: any MainExecutor { main }
    static var defaultExecutor: any TaskExecutor { pool }
}

/// Jobs run by `threads` threads of its own (started with it), or, with 0, by whichever thread
/// calls `run()` (the main thread, for the main executor; serial then). Jobs due later (sleeps)
/// wait in `timers` until their instant. Every field is guarded by `mutex`; `@unchecked
/// Sendable` because that mutex is a pthread one (callers on any thread, including NIO's event
/// loops, enqueue).
final class JobLoop: MainExecutor, TaskExecutor, SchedulingExecutor, @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    /// Guarded by `mutex`.
    private var ready: [UnownedJob] = []
    private var readyStart = 0
    /// Guarded by `mutex`: a handful at most (sleeping tasks), so a plain array.
    private var timers: [(deadline: ContinuousClock.Instant, job: UnownedJob)] = []
    private var stopped = false
    /// The thread `run()` runs on (the main executor's isolation check). Set once, before any job.
    private var runThread: pthread_t?
    private let serial: Bool

    init(threads: Int) {
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
        ready.reserveCapacity(64)
        serial = threads == 0
        for index in 0..<threads {
            NamedThread.start("tonearm-async-\(index)") { [self] in work() }
        }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        pthread_mutex_lock(mutex)
        ready.append(job)
        pthread_cond_signal(condition)
        pthread_mutex_unlock(mutex)
    }

    func enqueue<C: Clock>(_ job: consuming ExecutorJob, at instant: C.Instant, tolerance: C.Duration?, clock: C) {
        let job = UnownedJob(job)
        let deadline: ContinuousClock.Instant
        if let instant = instant as? ContinuousClock.Instant {
            deadline = instant
        } else if let instant = instant as? SuspendingClock.Instant {
            // The suspending clock stops while the machine sleeps; a daemon's timers are short.
            deadline = ContinuousClock.now.advanced(by: SuspendingClock.now.duration(to: instant))
        } else {
            // Any other clock whose durations are `Duration`s (none is used here).
            deadline = ContinuousClock.now.advanced(by: (clock.now.duration(to: instant) as? Duration) ?? .zero)
        }
        pthread_mutex_lock(mutex)
        timers.append((deadline, job))
        // Every waiter recomputes how long it may sleep.
        pthread_cond_broadcast(condition)
        pthread_mutex_unlock(mutex)
    }

    /// The main executor's loop, on the main thread, until `stop()`.
    func run() throws {
        pthread_mutex_lock(mutex)
        runThread = pthread_self()
        pthread_mutex_unlock(mutex)
        work()
    }

    func stop() {
        pthread_mutex_lock(mutex)
        stopped = true
        pthread_cond_broadcast(condition)
        pthread_mutex_unlock(mutex)
    }

    func isIsolatingCurrentContext() -> Bool? {
        // The pool is no serial executor: nothing is isolated to it.
        guard serial else { return false }
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        guard let runThread else { return false }
        return pthread_equal(runThread, pthread_self()) != 0
    }

    func checkIsolated() {
        precondition(isIsolatingCurrentContext() == true, "not on the main executor's thread")
    }

    /// Runs jobs as they are due; sleeps (no timeout unless a timer is set) when none is.
    private func work() {
        pthread_mutex_lock(mutex)
        while !stopped {
            let now = ContinuousClock.now
            var earliest: ContinuousClock.Instant?
            var index = 0
            while index < timers.count {
                if timers[index].deadline <= now {
                    ready.append(timers.remove(at: index).job)
                } else {
                    earliest = min(earliest ?? timers[index].deadline, timers[index].deadline)
                    index += 1
                }
            }
            if readyStart < ready.count {
                let job = ready[readyStart]
                readyStart += 1
                if readyStart == ready.count {
                    ready.removeAll(keepingCapacity: true)
                    readyStart = 0
                } else if readyStart >= 256 && readyStart * 2 >= ready.count {
                    // A queue that never empties is compacted now and then, not grown for ever.
                    ready.removeFirst(readyStart)
                    readyStart = 0
                }
                pthread_mutex_unlock(mutex)
                if serial {
                    job.runSynchronously(on: asUnownedSerialExecutor())
                } else {
                    job.runSynchronously(on: asUnownedTaskExecutor())
                }
                pthread_mutex_lock(mutex)
            } else if let earliest {
                var until = Self.monotonicTimespec(after: now.duration(to: earliest))
                pthread_cond_timedwait(condition, mutex, &until)
            } else {
                pthread_cond_wait(condition, mutex)
            }
        }
        pthread_mutex_unlock(mutex)
    }

    private static func monotonicTimespec(after wait: Duration) -> timespec {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let (seconds, attoseconds) = wait.components
        let nanoseconds = Int(now.tv_nsec) + Int(max(attoseconds, 0) / 1_000_000_000)
        return timespec(
            tv_sec: now.tv_sec + Int(max(seconds, 0)) + nanoseconds / 1_000_000_000,
            tv_nsec: nanoseconds % 1_000_000_000)
    }
}
