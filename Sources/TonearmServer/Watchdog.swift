import Logging
import NIOCore
import TonearmPlayer

/// systemd's service watchdog (`WatchdogSec=`): `WATCHDOG=1` is sent only while the daemon is
/// healthy. The ping runs as a task on the control socket's event loop, so a ping at all proves
/// that loop answers; and while playing, the device must have taken frames since the last ping,
/// so a wedged output thread (a write that never returns) stops the pings and systemd restarts
/// the service, which then resumes from its state file.
///
/// `@unchecked Sendable`: `lastFrames` and `reportedUnhealthy` are read and written only on the
/// event loop the pings run on.
package final class Watchdog: @unchecked Sendable {
    private let interval: Double
    private let player: Player
    private let ping: @Sendable () -> Void
    private let logger: Logger
    private var lastFrames: Int?
    private var reportedUnhealthy = false

    /// - Parameter interval: systemd's watchdog interval; pings go three times in it.
    package init(interval: Double, player: Player, logger: Logger, ping: @escaping @Sendable () -> Void) {
        self.interval = interval
        self.player = player
        self.logger = logger
        self.ping = ping
    }

    func start(on eventLoop: any EventLoop) -> RepeatedTask {
        let period = TimeAmount.nanoseconds(Int64(max(interval / 3, 0.01) * 1e9))
        return eventLoop.scheduleRepeatedTask(initialDelay: .zero, delay: period) { [self] _ in tick() }
    }

    private func tick() {
        let frames = player.framesWritten
        defer { lastFrames = frames }
        if player.state == .playing, let lastFrames, frames == lastFrames {
            if !reportedUnhealthy {
                reportedUnhealthy = true
                logger.error("playing, but the output has taken no audio since the last watchdog ping; pings stop")
            }
            return
        }
        reportedUnhealthy = false
        ping()
    }
}
