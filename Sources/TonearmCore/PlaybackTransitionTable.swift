/// The pure transition function: `nextState(for:from:)` returns the state an action leads to,
/// or nil when the action is rejected in that state. It reads no clock and does no I/O, so
/// every (state, action) pair can be tested exhaustively.
///
/// Accepted actions that leave the state as it is (pause while paused, stop while idle)
/// return the same state: the request was fine, there was just nothing to do.
///
/// Additions beyond the original design, each covered by a test:
/// - `load` from playing, paused, buffering, seeking and ended switches tracks mid-play.
/// - `seek` from ready and ended lands paused.
/// - `didReachEnd` from paused and buffering: the last samples may drain as the user pauses.
/// - `deviceRestored` from paused resumes: the adapter sends it only for a pause that an
///   interruption caused, so a pause the user asked for is never undone by it.
/// - `didAdvance` (the next queued item is heard, gapless) keeps playing, paused and buffering
///   as they are; in every other state it is stale news and rejected.
package enum PlaybackTransitionTable {
    package static func nextState(for action: PlaybackAction, from state: PlaybackState) -> PlaybackState? {
        // Actions that mean the same in every state.
        switch action {
        case .load(let url):
            return .loading(url)
        case .stop:
            return .idle
        case .didFail(let error):
            // Nothing is open in idle; a failed player keeps the first failure's reason.
            switch state {
            case .idle, .failed: return nil
            default: return .failed(error)
            }
        default:
            break
        }

        switch state {
        case .idle:
            return nil

        case .loading:
            return action == .didBecomeReady ? .ready : nil

        case .ready:
            switch action {
            case .play: return .playing
            case .seek(let target): return .seeking(to: target, previousState: .paused)
            default: return nil
            }

        case .playing:
            switch action {
            case .play, .didFinishBuffering, .didAdvance: return .playing
            case .pause, .deviceLost: return .paused
            case .didStartBuffering: return .buffering(previousState: .playing)
            case .seek(let target): return .seeking(to: target, previousState: .playing)
            case .didReachEnd: return .ended
            default: return nil
            }

        case .paused:
            switch action {
            case .play, .deviceRestored: return .playing
            case .pause, .deviceLost, .didAdvance: return .paused
            case .didStartBuffering: return .buffering(previousState: .paused)
            case .seek(let target): return .seeking(to: target, previousState: .paused)
            case .didReachEnd: return .ended
            default: return nil
            }

        case .buffering(let previous):
            switch action {
            case .didFinishBuffering: return previous.playbackState
            case .play: return .buffering(previousState: .playing)
            case .pause, .deviceLost: return .buffering(previousState: .paused)
            case .didStartBuffering, .didAdvance: return state
            case .seek(let target): return .seeking(to: target, previousState: previous)
            case .didReachEnd: return .ended
            default: return nil
            }

        case .seeking(let target, let previous):
            switch action {
            case .didFinishSeeking: return previous.playbackState
            case .seek(let newTarget): return .seeking(to: newTarget, previousState: previous)
            case .play: return .seeking(to: target, previousState: .playing)
            case .pause, .deviceLost:
                return .seeking(to: target, previousState: .paused)
            default: return nil
            }

        case .ended:
            switch action {
            case .play: return .playing
            case .seek(let target): return .seeking(to: target, previousState: .paused)
            case .didReachEnd: return .ended
            default: return nil
            }

        case .failed(let error):
            return action == .retry && error.isRecoverable ? .idle : nil
        }
    }
}
