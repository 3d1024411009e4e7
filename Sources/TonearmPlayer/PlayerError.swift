import TonearmCore

/// Why a user command did not do what was asked.
package enum PlayerError: Error, Sendable, Equatable {
    /// The state machine does not allow the action in this state.
    case rejected(state: PlaybackState, action: PlaybackAction)
    /// The media could not be loaded or played.
    case failed(PlaybackError)
    /// Another command replaced this one before it finished (a newer load, a stop).
    case superseded(by: PlaybackState)
    /// The request itself is unusable (a negative position, an empty URL).
    case invalid(String)
}
