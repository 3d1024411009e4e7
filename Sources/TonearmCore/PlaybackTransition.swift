import struct Foundation.Date

/// One accepted step of the state machine. A transition whose `from` equals `to` was
/// accepted but changed nothing (pause while paused): clients learn that from `didChangeState`.
public struct PlaybackTransition: Equatable, Sendable {
    public let from: PlaybackState
    public let to: PlaybackState
    public let action: PlaybackAction
    public let timestamp: Date

    public init(from: PlaybackState, to: PlaybackState, action: PlaybackAction, timestamp: Date) {
        self.from = from
        self.to = to
        self.action = action
        self.timestamp = timestamp
    }

    public var didChangeState: Bool { from != to }
}
