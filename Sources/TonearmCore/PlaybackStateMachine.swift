import TonearmSync

import struct Foundation.Date

/// Holds the current `PlaybackState` and moves it only through `PlaybackTransitionTable`.
///
/// Thread-safety: the state lives in one `Locked`; `send` may be called from any thread or task.
/// Subscribers are yielded to while that lock is held, so every subscriber sees transitions in
/// the order they were accepted. The subscriber lists are `StreamFanout`s, whose own locks keep
/// a subscriber that goes away mid-publish from deadlocking with `send` (see there).
package final class PlaybackStateMachine: Sendable {
    package typealias Clock = @Sendable () -> Date

    private let guarded: Locked<PlaybackState>
    private let stateSubscribers = StreamFanout<PlaybackState>()
    private let transitionSubscribers = StreamFanout<PlaybackTransition>()
    private let now: Clock

    /// - Parameter now: the clock that stamps transitions; tests inject a fixed or stepping one.
    package init(initialState: PlaybackState = .idle, now: @escaping Clock = { Date() }) {
        self.guarded = Locked(initialState)
        self.now = now
    }

    package var currentState: PlaybackState { guarded.withLock { $0 } }

    package func canPerform(_ action: PlaybackAction) -> Bool {
        PlaybackTransitionTable.nextState(for: action, from: currentState) != nil
    }

    /// Applies `action`. Returns the transition, or nil when the action is rejected in the
    /// current state (the state is then unchanged). Only transitions that change the state are
    /// published to the streams.
    @discardableResult
    package func send(_ action: PlaybackAction) -> PlaybackTransition? {
        let timestamp = now()
        return guarded.withLock { state in
            let from = state
            guard let to = PlaybackTransitionTable.nextState(for: action, from: from) else { return nil }
            let transition = PlaybackTransition(from: from, to: to, action: action, timestamp: timestamp)
            guard transition.didChangeState else { return transition }
            state = to
            stateSubscribers.yield(to)
            transitionSubscribers.yield(transition)
            return transition
        }
    }

    /// States from now on; the first element is the current state.
    package func states() -> AsyncStream<PlaybackState> {
        guarded.withLock { stateSubscribers.subscribe(first: $0) }
    }

    /// Transitions accepted from now on (events only: no replay of the current state).
    package func transitions() -> AsyncStream<PlaybackTransition> {
        transitionSubscribers.subscribe()
    }

    /// Suspends until the state satisfies `predicate` (checked against the current state first).
    package func firstState(where predicate: @Sendable (PlaybackState) -> Bool) async -> PlaybackState? {
        for await state in states() where predicate(state) { return state }
        return nil
    }
}
