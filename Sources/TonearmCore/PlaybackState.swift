import typealias Foundation.TimeInterval
import struct Foundation.URL

/// The state a buffering or seeking player returns to when that finishes.
package enum ResumableState: String, Equatable, Hashable, Sendable, CaseIterable {
    case playing
    case paused

    package var playbackState: PlaybackState {
        switch self {
        case .playing: .playing
        case .paused: .paused
        }
    }
}

/// Every state the player can be in. Only `PlaybackStateMachine` moves between them.
package enum PlaybackState: Equatable, Hashable, Sendable {
    case idle
    case loading(URL)
    case ready
    case playing
    case paused
    case buffering(previousState: ResumableState)
    case seeking(to: TimeInterval, previousState: ResumableState)
    case ended
    case failed(PlaybackError)

    /// A media item is open (the engine holds a file and may hold the device).
    package var isActive: Bool {
        switch self {
        case .ready, .playing, .paused, .buffering, .seeking, .ended: true
        case .idle, .loading, .failed: false
        }
    }

    package var canPlay: Bool { PlaybackTransitionTable.nextState(for: .play, from: self) != nil }
    package var canPause: Bool { PlaybackTransitionTable.nextState(for: .pause, from: self) != nil }

    /// The state's name as used on the wire and in logs.
    package var name: String {
        switch self {
        case .idle: "idle"
        case .loading: "loading"
        case .ready: "ready"
        case .playing: "playing"
        case .paused: "paused"
        case .buffering: "buffering"
        case .seeking: "seeking"
        case .ended: "ended"
        case .failed: "failed"
        }
    }
}
