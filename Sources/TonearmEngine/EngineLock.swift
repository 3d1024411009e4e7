import Glibc

/// One mutex with two condition variables: the decoder thread sleeps on `decoderCondition` (room in
/// the pipe, a new command, a `next` item) and the output thread on `outputCondition` (chunks,
/// play/pause, a command), so that neither wakes the other needlessly. Timed waits use CLOCK_MONOTONIC.
///
/// `@unchecked Sendable`: the pthread objects are designed to be shared between threads; their
/// storage is allocated once and never moved.
final class EngineLock: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let decoderCondition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private let outputCondition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    init() {
        pthread_mutex_init(mutex, nil)
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

    func lock() { pthread_mutex_lock(mutex) }
    func unlock() { pthread_mutex_unlock(mutex) }

    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        lock()
        defer { unlock() }
        return try body()
    }

    func wakeDecoder() { pthread_cond_broadcast(decoderCondition) }
    func wakeOutput() { pthread_cond_broadcast(outputCondition) }
    func wakeAll() { wakeDecoder(); wakeOutput() }

    /// Call with the lock held. Returns false on timeout.
    @discardableResult
    func waitDecoder(untilMonotonic deadline: Double? = nil) -> Bool { wait(decoderCondition, until: deadline) }
    /// Call with the lock held. Returns false on timeout.
    @discardableResult
    func waitOutput(untilMonotonic deadline: Double? = nil) -> Bool { wait(outputCondition, until: deadline) }

    private func wait(_ condition: UnsafeMutablePointer<pthread_cond_t>, until deadline: Double?) -> Bool {
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
