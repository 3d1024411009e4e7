import Glibc
import Synchronization

/// One mutex with two condition variables: the decoder thread sleeps on `decoderCondition` (room in
/// the pipe, a new command, a `next` item) and the output thread on `outputCondition` (chunks,
/// play/pause, a command), so that neither wakes the other needlessly. Timed waits use CLOCK_MONOTONIC.
///
/// A wake-up asked with the lock held is sent when the lock is released (or before the asking
/// thread sleeps): woken while the mutex is still held, the other thread would preempt its waker
/// (they often share a CPU), find the mutex taken, sleep again, and be woken once more by the
/// unlock: three context switches where one will do.
///
/// `@unchecked Sendable`: the pthread objects are designed to be shared between threads; their
/// storage is allocated once and never moved. `pendingWakes` is read and written only with the
/// mutex held.
final class EngineLock: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let decoderCondition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private let outputCondition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    init() {
        // Adaptive: a thread that finds the mutex taken spins a little before it sleeps. Both
        // threads hold it only for bookkeeping (never across I/O or decoding), so the holder is
        // nearly always about to let go, and sleeping would cost two context switches instead.
        var mutexAttributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&mutexAttributes)
        pthread_mutexattr_settype(&mutexAttributes, Int32(PTHREAD_MUTEX_ADAPTIVE_NP))
        pthread_mutex_init(mutex, &mutexAttributes)
        pthread_mutexattr_destroy(&mutexAttributes)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(decoderCondition, &attributes)
        pthread_cond_init(outputCondition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(decoderCondition)
        pthread_cond_destroy(outputCondition)
        pthread_mutex_destroy(mutex)
        decoderCondition.deallocate()
        outputCondition.deallocate()
        mutex.deallocate()
    }

    /// Wake-ups asked since the lock was taken (mutex held): decoder, output.
    private var pendingWakes: (decoder: Bool, output: Bool) = (false, false)

    #if DEBUG
        /// The thread that holds the mutex (0: none), for debug builds' `assertHeld`: written only by
        /// that thread, just after taking the mutex and just before letting it go. Any thread may ask
        /// whether it is the holder without the mutex, hence atomic; relaxed is enough, since a thread
        /// reads its own id back only if it wrote it.
        private let holder = Atomic<UInt>(0)
    #endif

    #if DEBUG
        /// The engine's two threads, each recorded by itself as it starts (mutex held), for
        /// debug builds' `assertOn`.
        private var roles: (output: pthread_t?, decoder: pthread_t?) = (nil, nil)
    #endif

    /// Records the calling thread as `role`'s. Mutex held.
    func record(_ role: EngineThread) {
        #if DEBUG
            assertHeld()
            switch role {
            case .output: roles.output = pthread_self()
            case .decoder: roles.decoder = pthread_self()
            }
        #endif
    }

    /// Stops a debug build where code given to `role`'s thread runs on another, or without the
    /// mutex.
    func assertOn(_ role: EngineThread, file: StaticString = #fileID, line: UInt = #line) {
        #if DEBUG
            assertHeld(file: file, line: line)
            let owner =
                switch role {
                case .output: roles.output
                case .decoder: roles.decoder
                }
            precondition(
                owner.map { pthread_equal($0, pthread_self()) != 0 } == true,
                "runs on the \(role) thread only", file: file, line: line)
        #endif
    }

    func lock() {
        pthread_mutex_lock(mutex)
        #if DEBUG
            holder.store(pthread_self(), ordering: .relaxed)
        #endif
    }

    func unlock() {
        let wakes = pendingWakes
        pendingWakes = (false, false)
        #if DEBUG
            holder.store(0, ordering: .relaxed)
        #endif
        pthread_mutex_unlock(mutex)
        send(wakes)
    }

    /// Whether the calling thread holds the lock. Debug builds only: release builds do not track
    /// the holder, and say true.
    var isHeldByCurrentThread: Bool {
        #if DEBUG
            pthread_equal(holder.load(ordering: .relaxed), pthread_self()) != 0
        #else
            true
        #endif
    }

    /// Stops a debug build where code documented as "lock held" runs without it.
    func assertHeld(file: StaticString = #fileID, line: UInt = #line) {
        #if DEBUG
            precondition(isHeldByCurrentThread, "the engine lock is not held here", file: file, line: line)
        #endif
    }

    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        lock()
        defer { unlock() }
        return try body()
    }

    /// Call with the lock held: the decoder is woken when the lock is released.
    func wakeDecoder() { pendingWakes.decoder = true }
    /// Call with the lock held: the output is woken when the lock is released.
    func wakeOutput() { pendingWakes.output = true }
    func wakeAll() {
        wakeDecoder()
        wakeOutput()
    }

    /// Call with the lock held. Returns false on timeout.
    @discardableResult
    func waitDecoder(untilMonotonic deadline: Double? = nil) -> Bool { wait(decoderCondition, until: deadline) }
    /// Call with the lock held. Returns false on timeout.
    @discardableResult
    func waitOutput(untilMonotonic deadline: Double? = nil) -> Bool { wait(outputCondition, until: deadline) }

    private func send(_ wakes: (decoder: Bool, output: Bool)) {
        if wakes.decoder { pthread_cond_broadcast(decoderCondition) }
        if wakes.output { pthread_cond_broadcast(outputCondition) }
    }

    private func wait(_ condition: UnsafeMutablePointer<pthread_cond_t>, until deadline: Double?) -> Bool {
        // What this thread asked for goes out before it sleeps (the wait releases the mutex only inside).
        send(pendingWakes)
        pendingWakes = (false, false)
        #if DEBUG
            holder.store(0, ordering: .relaxed)
            defer { holder.store(pthread_self(), ordering: .relaxed) }
        #endif
        guard let deadline else {
            pthread_cond_wait(condition, mutex)
            return true
        }
        var time = timespec(tv_sec: Int(deadline), tv_nsec: Int((deadline - deadline.rounded(.down)) * 1e9))
        return pthread_cond_timedwait(condition, mutex, &time) == 0
    }

    /// Seconds on the monotonic clock, the clock timed waits use.
    static func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}
