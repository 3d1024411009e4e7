import Foundation
import Synchronization
import Testing
import TonearmSync

@testable import TonearmCore

private let a = URL(fileURLWithPath: "/music/a.flac")
private let b = URL(fileURLWithPath: "/music/b.flac")

/// A clock that advances one second each time it is read.
private final class SteppingClock: Sendable {
    private let seconds = Locked<Double>(0)
    func now() -> Date {
        seconds.withLock {
            $0 += 1
            return Date(timeIntervalSince1970: $0)
        }
    }
}

@Suite("State machine behaviour", .timeLimit(.minutes(1)))
struct StateMachineBehaviourTests {
    @Test func computedProperties() {
        #expect(!PlaybackState.idle.isActive && !PlaybackState.loading(a).isActive)
        #expect(PlaybackState.ready.isActive && PlaybackState.playing.isActive && PlaybackState.ended.isActive)
        #expect(!PlaybackState.failed(PlaybackError(.ioError, "x")).isActive)
        #expect(PlaybackState.ready.canPlay && PlaybackState.paused.canPlay && PlaybackState.ended.canPlay)
        #expect(!PlaybackState.idle.canPlay && !PlaybackState.loading(a).canPlay)
        #expect(PlaybackState.playing.canPause && !PlaybackState.ready.canPause && !PlaybackState.idle.canPause)
        #expect(PlaybackError(.deviceUnavailable, "").isRecoverable)
        #expect(!PlaybackError(.unsupportedFormat, "").isRecoverable)
        #expect(PlaybackError(.network, "").isRecoverable, "a stream lost for good may come back: retry")
    }

    @Test func loadSwitchesTracksMidPlay() {
        for start: PlaybackState in [
            .playing, .paused, .buffering(previousState: .playing),
            .seeking(to: 3, previousState: .paused), .ended, .loading(a),
        ] {
            #expect(PlaybackTransitionTable.nextState(for: .load(b), from: start) == .loading(b))
        }
    }

    @Test func seekFromReadyAndEndedResumesPaused() {
        let machine = PlaybackStateMachine(initialState: .ended)
        machine.send(.seek(to: 5))
        #expect(machine.currentState == .seeking(to: 5, previousState: .paused))
        machine.send(.didFinishSeeking)
        #expect(machine.currentState == .paused)
    }

    @Test func seekingRemembersLatestResumeState() {
        let machine = PlaybackStateMachine(initialState: .playing)
        machine.send(.seek(to: 5))
        machine.send(.pause)
        machine.send(.seek(to: 7))
        #expect(machine.currentState == .seeking(to: 7, previousState: .paused))
        machine.send(.play)
        machine.send(.didFinishSeeking)
        #expect(machine.currentState == .playing)
    }

    @Test func staleEndDuringSeekIsRejected() {
        let machine = PlaybackStateMachine(initialState: .seeking(to: 1, previousState: .playing))
        #expect(machine.send(.didReachEnd) == nil)
        #expect(machine.currentState == .seeking(to: 1, previousState: .playing))
    }

    @Test func timestampsComeFromInjectedClock() {
        let clock = SteppingClock()
        let machine = PlaybackStateMachine(now: { clock.now() })
        let first = machine.send(.load(a))
        let second = machine.send(.didBecomeReady)
        #expect(first?.timestamp == Date(timeIntervalSince1970: 1))
        #expect(second?.timestamp == Date(timeIntervalSince1970: 2))
    }

    @Test func stateStreamStartsWithCurrentState() async {
        let machine = PlaybackStateMachine(initialState: .ready)
        var iterator = machine.states().makeAsyncIterator()
        #expect(await iterator.next() == .ready)
        machine.send(.play)
        machine.send(.play)  // unchanged: not published
        machine.send(.pause)
        #expect(await iterator.next() == .playing)
        #expect(await iterator.next() == .paused)
    }

    @Test func transitionStreamCarriesEventsOnlyInOrder() async {
        let machine = PlaybackStateMachine(initialState: .idle)
        machine.send(.load(a))  // before subscribing: not delivered
        var iterator = machine.transitions().makeAsyncIterator()
        machine.send(.didBecomeReady)
        machine.send(.pause)  // rejected: not delivered
        machine.send(.play)
        let first = await iterator.next()
        let second = await iterator.next()
        #expect(first?.from == .loading(a) && first?.to == .ready && first?.action == .didBecomeReady)
        #expect(second?.from == .ready && second?.to == .playing && second?.action == .play)
    }

    @Test func firstStateWaitsForPredicate() async {
        let machine = PlaybackStateMachine(initialState: .loading(a))
        async let settled = machine.firstState { $0 != .loading(a) }
        try? await Task.sleep(for: .milliseconds(20))
        machine.send(.didBecomeReady)
        #expect(await settled == .ready)
    }

    /// Regression: `send` yielded to subscribers under the lock that a cancelled subscriber's
    /// `onTermination` needs, while cancelling holds the task's lock that `yield` needs. A client
    /// leaving while a transition was published deadlocked the daemon. Here one thread publishes
    /// without pause while another cancels subscribers that are waiting; with the bug this hangs
    /// within a few hundred rounds. Both run on their own threads, so a hang fails the test at the
    /// time bound instead of holding the test runner's threads.
    @Test func subscribersLeavingWhileTransitionsArePublishedDoNotDeadlock() async {
        let machine = PlaybackStateMachine(initialState: .paused)
        let stop = Atomic<Bool>(false)
        let finished = Atomic<Int>(0)
        let publisher = Thread {
            while !stop.load(ordering: .relaxed) {
                machine.send(.play)
                machine.send(.pause)
            }
            finished.add(1, ordering: .relaxed)
        }
        let canceller = Thread {
            for _ in 0..<3000 {
                let waiting = [
                    Task { for await _ in machine.transitions() {} },
                    Task { for await _ in machine.states() {} },
                    Task { _ = await machine.firstState { _ in false } },
                ]
                usleep(50)
                waiting.forEach { $0.cancel() }
            }
            stop.store(true, ordering: .relaxed)
            finished.add(1, ordering: .relaxed)
        }
        publisher.start()
        canceller.start()
        let deadline = ContinuousClock.now + .seconds(40)
        while finished.load(ordering: .relaxed) < 2 && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(50))
        }
        #expect(finished.load(ordering: .relaxed) == 2, "publishing and unsubscribing deadlocked")
    }

    @Test func retryOnlyWhenRecoverable() {
        let machine = PlaybackStateMachine(initialState: .failed(PlaybackError(.decodeFailed, "bad")))
        #expect(machine.send(.retry) == nil)
        machine.send(.load(a))
        machine.send(.didFail(PlaybackError(.deviceUnavailable, "busy")))
        #expect(machine.send(.retry)?.to == .idle)
    }
}
