import typealias Foundation.TimeInterval
import struct Foundation.URL

/// Everything that can ask the state machine to move. Each case names its sender: a user's
/// command (through a protocol front-end and the player), or the engine's news about the item
/// being heard (through the adapter, `EngineEventAdapter`).
package enum PlaybackAction: Equatable, Hashable, Sendable {
    // User commands (the player, on a client's request)
    case load(URL)
    case play
    case pause
    case seek(to: TimeInterval)
    case stop
    case retry
    // Engine news (the adapter)
    /// A loaded item's first audio is decoded and the device is open.
    case didBecomeReady
    /// Playing, the output ran out of decoded audio / has enough again.
    case didStartBuffering
    case didFinishBuffering
    /// The engine landed where the latest seek asked.
    case didFinishSeeking
    /// The next queued item is now being heard, joined to the previous one without a gap. The
    /// state stays as it is (playing stays playing): only the item changes.
    case didAdvance
    /// The last item was heard to its end and nothing follows.
    case didReachEnd
    case didFail(PlaybackError)
    /// The output device went away (unplugged, powered off). The names are AVFoundation's, kept
    /// because they are on the wire in transition events; here the "audio session" is the device.
    case deviceLost
    /// The lost device is back and playback goes on by itself (`resume_after_interruption`).
    case deviceRestored

    /// The action's name as used on the wire and in logs.
    package var name: String {
        switch self {
        case .load: "load"
        case .play: "play"
        case .pause: "pause"
        case .seek: "seek"
        case .stop: "stop"
        case .retry: "retry"
        case .didBecomeReady: "didBecomeReady"
        case .didStartBuffering: "didStartBuffering"
        case .didFinishBuffering: "didFinishBuffering"
        case .didFinishSeeking: "didFinishSeeking"
        case .didAdvance: "didAdvance"
        case .didReachEnd: "didReachEnd"
        case .didFail: "didFail"
        case .deviceLost: "deviceLost"
        case .deviceRestored: "deviceRestored"
        }
    }
}
