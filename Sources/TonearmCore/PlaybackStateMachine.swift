import struct Foundation.Date
import struct Foundation.UUID
import TonearmSync

/// Holds the current `PlaybackState` and moves it only through `PlaybackTransitionTable`.
///
/// Thread-safety: all state lives in one `Locked`; `send` may be called from any thread or task.
/// Stream continuations are yielded to while the lock is held, so every subscriber sees
/// transitions in the order they were accepted.
public final class PlaybackStateMachine: Sendable {
    public typealias Clock = @Sendable () -> Date

    private struct Guarded {
        var state: PlaybackState
        var stateSubscribers: [UUID: AsyncStream<PlaybackState>.Continuation] = [:]
        var transitionSubscribers: [UUID: AsyncStream<PlaybackTransition>.Continuation] = [:]
    }

    private let guarded: Locked<Guarded>
    private let now: Clock

    /// - Parameter now: the clock that stamps transitions; tests inject a fixed or stepping one.
    public init(initialState: PlaybackState = .idle, now: @escaping Clock = { Date() }) {
        self.guarded = Locked(Guarded(state: initialState))
        self.now = now
    }

    public var currentState: PlaybackState { guarded.withLock { $0.state } }

    public func canPerform(_ action: PlaybackAction) -> Bool {
        PlaybackTransitionTable.nextState(for: action, from: currentState) != nil
    }

    /// Applies `action`. Returns the transition, or nil when the action is rejected in the
    /// current state (the state is then unchanged). Only transitions that change the state are
    /// published to the streams.
    @discardableResult
    public func send(_ action: PlaybackAction) -> PlaybackTransition? {
        let timestamp = now()
        return guarded.withLock { guarded in
            let from = guarded.state
            guard let to = PlaybackTransitionTable.nextState(for: action, from: from) else { return nil }
            let transition = PlaybackTransition(from: from, to: to, action: action, timestamp: timestamp)
            guard transition.didChangeState else { return transition }
            guarded.state = to
            for continuation in guarded.stateSubscribers.values { continuation.yield(to) }
            for continuation in guarded.transitionSubscribers.values { continuation.yield(transition) }
            return transition
        }
    }

    /// States from now on; the first element is the current state.
    public func states() -> AsyncStream<PlaybackState> {
        let (stream, continuation) = AsyncStream<PlaybackState>.makeStream(bufferingPolicy: .unbounded)
        let id = UUID()
        guarded.withLock { guarded in
            continuation.yield(guarded.state)
            guarded.stateSubscribers[id] = continuation
        }
        continuation.onTermination = { [weak self] _ in
            self?.guarded.withLock { _ = $0.stateSubscribers.removeValue(forKey: id) }
        }
        return stream
    }

    /// Transitions accepted from now on (events only: no replay of the current state).
    public func transitions() -> AsyncStream<PlaybackTransition> {
        let (stream, continuation) = AsyncStream<PlaybackTransition>.makeStream(bufferingPolicy: .unbounded)
        let id = UUID()
        guarded.withLock { $0.transitionSubscribers[id] = continuation }
        continuation.onTermination = { [weak self] _ in
            self?.guarded.withLock { _ = $0.transitionSubscribers.removeValue(forKey: id) }
        }
        return stream
    }

    /// Suspends until the state satisfies `predicate` (checked against the current state first).
    public func firstState(where predicate: @Sendable (PlaybackState) -> Bool) async -> PlaybackState? {
        for await state in states() where predicate(state) { return state }
        return nil
    }
}
