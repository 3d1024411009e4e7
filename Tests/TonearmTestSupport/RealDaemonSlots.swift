import Foundation
import Testing
import TonearmSync

/// How the suites that drive real processes (a tonearmd, a peer, a browser) share the machine:
/// a few suites at a time, each on a thread of its own, each test bounded in time from its own
/// start.
///
/// Those tests block the thread they run on (plain sockets and waits, like any script). On
/// Swift's cooperative pool (as many threads as cores: 2 here) two of them would hold every
/// thread and starve the engine's async tests. Run on a task executor of their own they block
/// only that, so `slots` suites (2, or `TONEARM_TEST_SLOTS`) run side by side, each its tests
/// one after another, while the pool serves everything else.
///
/// The slot is taken per suite, not per test: Swift Testing lets only so many test cases run at
/// once (twice the cores), and a test case waiting here for a slot would hold one of those
/// places, so that a suite holding every slot could wait for a place behind tests that wait for
/// it. A suite waiting for a slot holds no place. And Swift Testing's `.timeLimit` would count
/// such a wait as the test's own time; `limit` starts with the test, and a test over it is
/// recorded as failed (its body, blocked in a sync call, runs on to its own timeouts, as under
/// `.timeLimit`). `alone` is for suites whose bounds are tightest (latencies under 50 ms, load,
/// throughput, real-time peers): such a suite takes every slot. Each suite must be `.serialized`.
package struct RealDaemonSlot: SuiteTrait, TestTrait, TestScoping {
    package let limit: Duration
    package let alone: Bool
    package var isRecursive: Bool { true }

    /// The suite itself as well (a recursive trait's default leaves it out), and each test case.
    package func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        test.isSuite || testCase != nil ? self : nil
    }

    package func provideScope(
        for test: Test, testCase: Test.Case?,
        performing function: @Sendable () async throws -> Void
    ) async throws {
        guard testCase != nil else {
            // A suite inside one that holds a slot already goes on in that slot.
            guard SlotGate.held == nil else { return try await function() }
            // Every suite starts within moments of the run's start: a second later the others
            // are in line, and an alone suite goes after them.
            if alone { try? await Task.sleep(for: .seconds(1)) }
            let slot = await SlotGate.shared.enter(alone: alone)
            defer { SlotGate.shared.leave(slot, alone: alone) }
            return try await SlotGate.$held.withValue(slot) { try await function() }
        }
        guard let slot = SlotGate.held else {
            Issue.record("a .realDaemon test runs only in a suite with that trait")
            return
        }
        let limit = self.limit
        let location = test.sourceLocation
        // The group ends only once both children have, so the body does not outlive this call.
        try await withoutActuallyEscaping(function) { body in
            try await withThrowingTaskGroup(of: Bool.self) { group in
                group.addTask {
                    try await withTaskExecutorPreference(SlotGate.shared.executors[slot]) { try await body() }
                    return true
                }
                group.addTask {
                    do { try await Task.sleep(for: limit) } catch { return false }
                    Issue.record("Time limit was exceeded: \(limit) from the test's start", sourceLocation: location)
                    return false
                }
                // The body's end, or the watchdog's issue first; either way the body is waited for.
                while let finished = try await group.next() {
                    if finished {
                        group.cancelAll()
                        break
                    }
                }
            }
        }
    }
}

extension Trait where Self == RealDaemonSlot {
    /// A slot among the real-process suites, and at most `minutes` for each of its tests.
    package static func realDaemon(minutes: Int, alone: Bool = false) -> Self {
        RealDaemonSlot(limit: .seconds(minutes * 60), alone: alone)
    }
}

/// The slots. The other suites are let in first come, first served; those that run alone come
/// last, one after another, once no other suite waits (every suite starts within moments of the
/// run's start; an alone suite asks a second later): by then the unit tests, which start with
/// everything, are mostly over.
final class SlotGate: Sendable {
    static let shared = SlotGate(
        slots: ProcessInfo.processInfo.environment["TONEARM_TEST_SLOTS"].flatMap(Int.init).map { max(1, $0) } ?? 2)

    /// One thread per slot, for the life of the test process: a test in slot n runs on executors[n].
    let executors: [SlotThread]

    /// The slot the suite running in this task holds (an alone suite: 0).
    @TaskLocal static var held: Int?

    private struct Waiter {
        let alone: Bool
        let grant: CheckedContinuation<Int, Never>
    }

    private struct State {
        var free: [Bool]
        var waiting: [Waiter] = []
    }

    /// `Locked`, not `Mutex`: ThreadSanitizer sees the ordering a pthread mutex makes (TonearmSync).
    private let state: Locked<State>

    init(slots: Int) {
        executors = (0..<slots).map { SlotThread(name: "test slot \($0)") }
        state = Locked(State(free: Array(repeating: true, count: slots)))
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
        var granted: [(CheckedContinuation<Int, Never>, Int)] = []
        while let next = s.waiting.firstIndex(where: { !$0.alone }), let slot = s.free.firstIndex(of: true) {
            s.free[slot] = false
            granted.append((s.waiting.remove(at: next).grant, slot))
        }
        if !s.waiting.contains(where: { !$0.alone }), s.free.allSatisfy({ $0 }),
            let next = s.waiting.firstIndex(where: \.alone)
        {
            s.free = Array(repeating: false, count: s.free.count)
            granted.append((s.waiting.remove(at: next).grant, 0))
        }
        return granted
    }
}

/// A task executor that runs its jobs, in order, on one thread of its own.
final class SlotThread: TaskExecutor, Sendable {
    private let jobs = Locked<[UnownedJob]>([])
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
