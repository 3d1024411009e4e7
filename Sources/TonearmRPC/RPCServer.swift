import Foundation
import Logging
import NIOCore
import TonearmFrontEnd
import TonearmLibrary
import TonearmPlayer
import TonearmProtocol

/// JSON-RPC 2.0 as a front-end: one object per line on a Unix domain socket. Each client is
/// served by an `OrderedRequestHandler` with an `RPCSession`: requests on one connection are
/// answered in order, and its event notifications are written between answers.
package struct RPCServer: Sendable {
    let player: Player
    let library: Library?
    let playlists: PlaylistStore?
    let logger: Logger

    package init(player: Player, library: Library? = nil, playlists: PlaylistStore? = nil, logger: Logger) {
        self.player = player
        self.library = library
        self.playlists = playlists
        self.logger = logger
    }

    /// The control socket at `address`, with the access rules and limits of `security`.
    package func frontEnd(
        address: ListenAddress, security: ControlSecurity, maxClients: Int, maxLineLength: Int,
        limits: ClientLimits, sources: SourcePolicy, longReplies: LongReplies
    ) -> FrontEnd {
        let service = service(maxLineLength: maxLineLength, limits: limits, sources: sources, longReplies: longReplies)
        return FrontEnd(
            name: "control", address: address, maxClients: maxClients,
            socketMode: security.socketMode, socketGroup: security.socketGroup, policy: security.policy,
            tcpAccess: .none,
            refusal: { refusal in
                let failure =
                    switch refusal {
                    case .tooManyClients(let limit):
                        RPC.Failure(.tooManyClients, "too many clients: at most \(limit) may be connected (control.max_clients)")
                    case .tooManyFromOneAddress(let limit):
                        RPC.Failure(.tooManyClients, "too many clients: at most \(limit) from one address")
                    case .notAllowed(let uid):
                        RPC.Failure(
                            .permissionDenied,
                            "permission denied: uid \(uid.map(String.init) ?? "?") may not use "
                                + "this daemon (control.allow_uids, allow_gids, read_gids)")
                    }
                return RPCFraming.line(RPC.response(id: .null, error: failure))
            },
            serve: { channel, access, peer in
                channel.eventLoop.makeCompletedFuture { try service.serve(channel, access: access, peer: peer) }
            })
    }

    /// JSON-RPC for connections that carry its lines: the control socket's, and the web
    /// remote's WebSockets (each text message a line).
    package func service(maxLineLength: Int, limits: ClientLimits, sources: SourcePolicy, longReplies: LongReplies) -> Service {
        Service(
            server: self,
            router: RequestRouter(
                player: player, sources: sources, longReplies: longReplies, library: library,
                playlists: playlists),
            maxLineLength: maxLineLength, limits: limits)
    }

    package struct Service: Sendable {
        let server: RPCServer
        let router: RequestRouter
        package let maxLineLength: Int
        let limits: ClientLimits

        /// Puts the request path with a JSON-RPC session at the end of `channel`'s pipeline. On
        /// the channel's event loop.
        package func serve(_ channel: any Channel, access: AccessPolicy.Level, peer: ClientPeer) throws {
            let client = ClientSession(
                player: server.player, library: server.library, logger: server.logger,
                access: access, peer: peer)
            let session = RPCSession(router: router, client: client, maxLineLength: maxLineLength, eventLoop: channel.eventLoop)
            let log = server.player.changes
            try channel.pipeline.syncOperations.addRequestPath(
                session, maxLineLength: maxLineLength, limits: limits, logger: server.logger, peer: peer,
                changes: ChangeDurability(recorded: { log.recorded }, whenDurable: log.whenDurable))
        }
    }
}
