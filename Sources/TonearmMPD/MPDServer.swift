import Foundation
import Logging
import NIOCore
import TonearmFrontEnd
import TonearmLibrary
import TonearmPlayer
import TonearmProtocol

/// MPD's protocol as a second front-end on the same player: a Unix socket (and, with
/// `mpd.bind`, a TCP one) served by `MPDSession`s on the control server's event loop.
package final class MPDServer: Sendable {
    let settings: MPDSettings
    let environment: MPDEnvironment
    private let logger: Logger
    private let controlSocket: String
    /// MPD's input buffer holds 8192 bytes with the newline; a longer line closes the connection.
    static let maxLineLength = 8191

    /// `database`: the music library, if there is one; without, the first of `input.roots` is
    /// read as the music directory, with no database.
    package init(
        settings: MPDSettings, player: Player, sources: SourcePolicy, library database: Library?,
        playlists: PlaylistStore? = nil, longReplies: LongReplies, controlSocket: String, logger: Logger
    ) {
        self.settings = settings
        self.logger = logger
        self.controlSocket = controlSocket
        let library = MPDLibrary(
            root: database?.root ?? sources.roots.paths.first, sources: sources, database: database,
            store: playlists)
        environment = MPDEnvironment(
            player: player, library: library, longReplies: longReplies,
            password: settings.password, outputName: player.output.device)
    }

    /// The Unix socket (with the control socket's mode, group and access lists) and the TCP one.
    package func frontEnds(security: ControlSecurity) -> [FrontEnd] {
        let environment = self.environment
        let logger = self.logger
        let limits = settings.limits
        let log = environment.player.changes
        let serve: @Sendable (any Channel, AccessPolicy.Level, ClientPeer) -> EventLoopFuture<Void> = { channel, access, peer in
            channel.eventLoop.makeCompletedFuture {
                let session = MPDSession(
                    environment: environment, access: access, logger: logger, peer: peer,
                    eventLoop: channel.eventLoop, allocator: channel.allocator)
                try channel.pipeline.syncOperations.addRequestPath(
                    session, maxLineLength: Self.maxLineLength, keepsEmptyLines: true, limits: limits, logger: logger,
                    peer: peer, changes: ChangeDurability(recorded: { log.recorded }, whenDurable: log.whenDurable))
            }
        }
        let refusal: @Sendable (FrontEnd.Refusal) -> ByteBuffer = { refusal in
            let error =
                switch refusal {
                case .tooManyClients(let limit): MPDError(.system, "too many clients: at most \(limit) may be connected (mpd.max_clients)")
                case .tooManyFromOneAddress(let limit): MPDError(.system, "too many clients: at most \(limit) from one address")
                case .notAllowed(let uid):
                    MPDError(
                        .permission,
                        "uid \(uid.map(String.init) ?? "?") may not use this daemon (control.allow_uids, allow_gids, read_gids)")
                }
            var response = MPDResponse()
            response.ack(error, index: 0, command: "")
            return response.buffer
        }
        var frontEnds = [
            FrontEnd(
                name: "mpd", address: .unix(path: settings.socketPath(beside: controlSocket), inherited: settings.inherited),
                maxClients: settings.maxClients, socketMode: security.socketMode, socketGroup: security.socketGroup,
                policy: security.policy, tcpAccess: .none, refusal: refusal, serve: serve)
        ]
        if let bind = settings.bind {
            // TCP peers have no credentials: the password (required unless loopback with open access) decides.
            frontEnds.append(
                FrontEnd(
                    name: "mpd-tcp", address: .tcp(host: bind.host, port: bind.port), maxClients: settings.maxClients,
                    socketMode: security.socketMode, socketGroup: security.socketGroup, policy: security.policy,
                    tcpAccess: .control, refusal: refusal, serve: serve))
        }
        return frontEnds
    }

    package func start() {
        environment.hub.start(player: environment.player, environment: environment)
    }

    package func stop() {
        environment.hub.stop()
        environment.library.shutdown()
    }
}
