import struct Foundation.Date

/// One accepted step of the state machine. A transition whose `from` equals `to` was
/// accepted but changed nothing (pause while paused): clients learn that from `didChangeState`.
package struct PlaybackTransition: Equatable, Sendable {
    package let from: PlaybackState
    package let to: PlaybackState
    package let action: PlaybackAction
    package let timestamp: Date

    package init(from: PlaybackState, to: PlaybackState, action: PlaybackAction, timestamp: Date) {
        self.from = from
        self.to = to
        self.action = action
        self.timestamp = timestamp
    }

    package var didChangeState: Bool { from != to }
}
