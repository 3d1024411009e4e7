import Foundation
import Testing

@testable import TonearmEngine

/// Debug builds know which thread holds the engine lock, so code documented as "lock held" or
/// as one thread's checks itself (`assertHeld`, `EngineControl.assertOn`).
@Suite("Engine lock knows its holder in debug builds")
struct EngineLockTests {
    /// Synchronous on purpose: a task may resume on another thread after an `await`, and a
    /// pthread mutex must be let go by the thread that took it.
    @Test func theHolderIsTheThreadThatTookIt() {
        #if DEBUG
            let lock = EngineLock()
            #expect(!lock.isHeldByCurrentThread)
            lock.lock()
            #expect(lock.isHeldByCurrentThread)
            // Another thread does not hold it while this one does.
            let answered = DispatchSemaphore(value: 0)
            nonisolated(unsafe) var elsewhere = true
            Thread {
                elsewhere = lock.isHeldByCurrentThread
                answered.signal()
            }.start()
            answered.wait()
            #expect(!elsewhere)
            // A timed wait lets go of it meanwhile and takes it back.
            lock.waitDecoder(untilMonotonic: EngineLock.now() + 0.01)
            #expect(lock.isHeldByCurrentThread)
            lock.unlock()
            #expect(!lock.isHeldByCurrentThread)
        #endif
    }
}
