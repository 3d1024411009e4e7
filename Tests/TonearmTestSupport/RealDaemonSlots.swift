import Foundation
import Synchronization
import Testing

/// How the tests that drive real processes (a tonearmd, a peer, a browser) share the machine:
/// a few at a time, each on a thread of its own, each bounded in time from its own start.
///
/// Those tests block the thread they run on (plain sockets and waits, like any script). On
/// Swift's cooperative pool (as many threads as cores: 2 here) two of them would hold every
/// thread and starve the engine's async tests. Run on a task executor of their own they block
/// only that, so `slots` of them (2, or `TONEARM_TEST_SLOTS`) run side by side while the pool
/// serves everything else.
///
/// Swift Testing's `.timeLimit` would count the wait for a slot as the test's own time; this
/// trait's `limit` starts once the test has its slot, and a test over it is recorded as failed
/// (its body, blocked in a sync call, runs on to its own timeouts, as under `.timeLimit`).
/// `alone` is for suites that measure the machine itself (latencies, CPU, throughput): such a
/// suite takes every slot for the whole of its run, its tests one after another in slot 0.
public struct RealDaemonSlot: SuiteTrait, TestTrait, TestScoping {
    public let limit: Duration
    public let alone: Bool
    public var isRecursive: Bool { true }

    public func provideScope(for test: Test, testCase: Test.Case?,
                             performing function: @Sendable () async throws -> Void) async throws {
        guard testCase != nil else {
            // A suite (or a parameterized test as a whole): an alone suite holds every slot.
            guard alone, test.isSuite else { return try await function() }
            _ = await SlotGate.shared.enter(alone: true)
            defer { SlotGate.shared.leave(0, alone: true) }
            return try await function()
        }
        let slot = alone ? 0 : await SlotGate.shared.enter(alone: false)
        defer { if !alone { SlotGate.shared.leave(slot, alone: false) } }
        let limit = self.limit
        // The group ends only once both children have, so the body does not outlive this call.
        try await withoutActuallyEscaping(function) { body in
            try await withThrowingTaskGroup(of: Bool.self) { group in
                group.addTask {
                    try await withTaskExecutorPreference(SlotGate.shared.executors[slot]) { try await body() }
                    return true
                }
                group.addTask {
                    do { try await Task.sleep(for: limit) } catch { return false }
                    Issue.record("Time limit was exceeded: \(limit) from the test's start")
                    return false
                }
                // The body's end, or the watchdog's issue first; either way the body is waited for.
                while let finished = try await group.next() {
                    if finished { group.cancelAll(); break }
                }
            }
        }
    }
}

extension Trait where Self == RealDaemonSlot {
    /// A slot among the real-process tests, and at most `minutes` in it.
    public static func realDaemon(minutes: Int, alone: Bool = false) -> Self {
        RealDaemonSlot(limit: .seconds(minutes * 60), alone: alone)
    }
}

/// The slots. Suites that run alone go first, one after another: the tests already in their
/// slots finish, and nothing else is let in while one of them waits, so the machine empties
/// once for all of them. The others are let in first come, first served.
final class SlotGate: Sendable {
    static let shared = SlotGate(
        slots: ProcessInfo.processInfo.environment["TONEARM_TEST_SLOTS"].flatMap(Int.init).map { max(1, $0) } ?? 2)

    /// One thread per slot, for the life of the test process: a test in slot n runs on executors[n].
    let executors: [SlotThread]

    private struct Waiter {
        let alone: Bool
        let grant: CheckedContinuation<Int, Never>
    }

    private struct State {
        var free: [Bool]
        var waiting: [Waiter] = []
    }

    private let state: Mutex<State>

    init(slots: Int) {
        executors = (0..<slots).map { SlotThread(name: "test slot \($0)") }
        state = Mutex(State(free: Array(repeating: true, count: slots)))
    }

    /// Waits for a free slot (for all of them, `alone`) and returns its number.
    func enter(alone: Bool) async -> Int {
        await withCheckedContinuation { grant in
            let granted = state.withLock { s -> [(CheckedContinuation<Int, Never>, Int)] in
                s.waiting.append(Waiter(alone: alone, grant: grant))
                return Self.admit(&s)
            }
            for (waiter, slot) in granted { waiter.resume(returning: slot) }
        }
    }

    func leave(_ slot: Int, alone: Bool) {
        let granted = state.withLock { s -> [(CheckedContinuation<Int, Never>, Int)] in
            if alone {
                s.free = Array(repeating: true, count: s.free.count)
            } else {
                s.free[slot] = true
            }
            return Self.admit(&s)
        }
        for (waiter, slot) in granted { waiter.resume(returning: slot) }
    }

    /// Admits whom it can (lock held); returns whom to resume.
    private static func admit(_ s: inout State) -> [(CheckedContinuation<Int, Never>, Int)] {
        if let first = s.waiting.firstIndex(where: \.alone) {
            guard s.free.allSatisfy({ $0 }) else { return [] }
            s.free = Array(repeating: false, count: s.free.count)
            return [(s.waiting.remove(at: first).grant, 0)]
        }
        var granted: [(CheckedContinuation<Int, Never>, Int)] = []
        while !s.waiting.isEmpty, let slot = s.free.firstIndex(of: true) {
            s.free[slot] = false
            granted.append((s.waiting.removeFirst().grant, slot))
        }
        return granted
    }
}

/// A task executor that runs its jobs, in order, on one thread of its own.
final class SlotThread: TaskExecutor, Sendable {
    private let jobs = Mutex<[UnownedJob]>([])
    private let ready = DispatchSemaphore(value: 0)

    init(name: String) {
        let thread = Thread { [self] in
            while true {
                ready.wait()
                guard let job = jobs.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else { continue }
                job.runSynchronously(on: asUnownedTaskExecutor())
            }
        }
        thread.name = name
        thread.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        jobs.withLock { $0.append(job) }
        ready.signal()
    }
}
