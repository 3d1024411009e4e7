import struct Foundation.URL
import typealias Foundation.TimeInterval

/// Everything that can ask the state machine to move: what a user asked for, what the
/// engine reported, and what happened around it (the output device, the host).
public enum PlaybackAction: Equatable, Hashable, Sendable {
    // User actions
    case load(URL)
    case play
    case pause
    case seek(to: TimeInterval)
    case stop
    case retry
    // System events (from the engine, through the adapter)
    case didBecomeReady
    case didStartPlaying
    case didPause
    case didStartBuffering
    case didFinishBuffering
    case didStartSeeking
    case didFinishSeeking
    case didReachEnd
    case didFail(PlaybackError)
    // External events
    case didEnterBackground
    case didBecomeActive
    case audioSessionInterrupted
    case audioSessionResumed

    /// The action's name as used on the wire and in logs.
    public var name: String {
        switch self {
        case .load: "load"
        case .play: "play"
        case .pause: "pause"
        case .seek: "seek"
        case .stop: "stop"
        case .retry: "retry"
        case .didBecomeReady: "didBecomeReady"
        case .didStartPlaying: "didStartPlaying"
        case .didPause: "didPause"
        case .didStartBuffering: "didStartBuffering"
        case .didFinishBuffering: "didFinishBuffering"
        case .didStartSeeking: "didStartSeeking"
        case .didFinishSeeking: "didFinishSeeking"
        case .didReachEnd: "didReachEnd"
        case .didFail: "didFail"
        case .didEnterBackground: "didEnterBackground"
        case .didBecomeActive: "didBecomeActive"
        case .audioSessionInterrupted: "audioSessionInterrupted"
        case .audioSessionResumed: "audioSessionResumed"
        }
    }
}
