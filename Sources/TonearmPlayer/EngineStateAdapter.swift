import TonearmCore
import TonearmEngine
import TonearmSync

/// Observes the engine and sends the matching `PlaybackAction`s to the state machine, the way an
/// AVPlayer adapter turns KVO changes into actions. Callbacks arrive on the engine's observer
/// queue, in order; the state machine rejects what does not fit its state (a late `didPause`
/// after the end), which is exactly what keeps stale engine news from moving it.
public final class EngineStateAdapter: Sendable {
    private struct Tracking {
        /// The item the engine's snapshots currently describe; events of older items are dropped.
        var itemID = 0
        var readyItemID = 0
        /// Only the latest seek's completion finishes `seeking`.
        var expectedSeekToken: Int?
        /// Why the last interruption happened, for status and events.
        var interruption: String?
    }

    private let machine: PlaybackStateMachine
    private let tracking = Locked(Tracking())
    private let tokens: Locked<[ObservationToken]> = Locked([])

    public init(engine: PlayerEngine, machine: PlaybackStateMachine) {
        self.machine = machine
        let observations = [
            engine.observe(\.itemID, options: [.initial, .new]) { [weak self] _, change in
                self?.tracking.withLock { $0.itemID = change.newValue }
            },
            engine.observe(\.status, options: [.new]) { [weak self] engine, change in
                self?.statusChanged(change.newValue, itemID: engine.snapshot.itemID)
            },
            engine.observe(\.timeControlStatus, options: [.new]) { [weak self] _, change in
                self?.timeControlChanged(change.newValue)
            },
            engine.observe(\.isPlaybackLikelyToKeepUp, options: [.new]) { [weak self] _, change in
                if change.newValue { self?.machine.send(.didFinishBuffering) }
            },
            engine.observeEvents { [weak self] _, event in self?.handle(event) },
        ]
        tokens.withLock { $0 = observations }
    }

    /// The coordinator announces the seek whose completion should end `seeking`.
    func expectSeek(token: Int?) { tracking.withLock { $0.expectedSeekToken = token } }

    public var interruptionReason: String? { tracking.withLock { $0.interruption } }

    private func statusChanged(_ status: EngineStatus, itemID: Int) {
        guard case .readyToPlay = status else { return }
        let first = tracking.withLock { tracking in
            guard tracking.readyItemID != itemID else { return false }
            tracking.readyItemID = itemID
            return true
        }
        if first { machine.send(.didBecomeReady) }
    }

    private func timeControlChanged(_ status: TimeControlStatus) {
        switch status {
        case .playing:
            tracking.withLock { $0.interruption = nil }
            machine.send(.didStartPlaying)
        case .paused: machine.send(.didPause)
        case .waitingToPlay: machine.send(.didStartBuffering)
        }
    }

    private func handle(_ event: EngineEvent) {
        let current = tracking.withLock { $0.itemID }
        switch event {
        case .loadStarted, .firstAudioWritten, .underrun:
            break
        case .didPlayToEnd(let item):
            if item == current { machine.send(.didReachEnd) }
        case .failed(let item, let failure):
            if item == current { machine.send(.didFail(PlaybackError(failure))) }
        case .seekCompleted(let item, let token, _):
            let expected = tracking.withLock { tracking in
                guard tracking.expectedSeekToken == token else { return false }
                tracking.expectedSeekToken = nil
                return true
            }
            if item == current && expected { machine.send(.didFinishSeeking) }
        case .deviceLost(let item, let failure):
            guard item == current else { return }
            tracking.withLock { $0.interruption = failure.message }
            machine.send(.audioSessionInterrupted)
        case .deviceRestored(let item, let resumes):
            guard item == current else { return }
            tracking.withLock { $0.interruption = nil }
            // Only a pause the interruption caused is undone; the engine decides (resume_after_interruption).
            if resumes { machine.send(.audioSessionResumed) }
        }
    }
}
