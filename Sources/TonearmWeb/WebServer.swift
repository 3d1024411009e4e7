import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOWebSocket
import TonearmFrontEnd
import TonearmLibrary
import TonearmPlayer
import TonearmProtocol
import TonearmRPC

/// The web remote: `GET /` serves the page, `GET /rpc` upgrades to a WebSocket that speaks the
/// control socket's JSON-RPC, `GET /art…` serves covers.
///
/// Built on swift-nio's own NIOHTTP1 and NIOWebSocket rather than Hummingbird: the WebSocket is
/// then one more handler in a NIO pipeline in front of the same request path that serves the
/// Unix socket (`RPCServer.Service`, `OrderedRequestHandler`): its ordering, back-pressure and
/// limits hold unchanged, and no other package is linked for a handful of routes.
package struct WebServer: Sendable {
    let settings: WebSettings
    let rpc: RPCServer.Service
    let player: Player
    let library: Library?
    let sources: SourcePolicy
    let longReplies: LongReplies
    let logger: Logger

    package init(
        settings: WebSettings, rpc: RPCServer.Service, player: Player, library: Library?, sources: SourcePolicy,
        longReplies: LongReplies, logger: Logger
    ) {
        self.settings = settings
        self.rpc = rpc
        self.player = player
        self.library = library
        self.sources = sources
        self.longReplies = longReplies
        self.logger = logger
    }

    package func frontEnd() -> FrontEnd {
        let access = WebAccess(
            password: settings.password, readPassword: settings.readPassword,
            hosts: WebAccess.hosts(bind: settings.bind, extra: settings.allowedHosts))
        let server = self
        return FrontEnd(
            name: "http", address: .tcp(host: settings.bind.host, port: settings.bind.port), maxClients: settings.maxClients,
            socketMode: 0, socketGroup: nil, policy: AccessPolicy(), tcpAccess: .control,
            refusal: { refusal in
                let text =
                    switch refusal {
                    case .tooManyClients(let limit): "too many connections: at most \(limit) (http.max_clients)\n"
                    case .tooManyFromOneAddress(let limit): "too many connections from one address: at most \(limit)\n"
                    case .notAllowed: "not allowed\n"
                    }
                var buffer = ByteBuffer()
                buffer.writeString(
                    "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: \(text.utf8.count)\r\n"
                        + "Connection: close\r\n\r\n" + text)
                return buffer
            },
            // One machine may not take every place: half of them (a browser opens about six per
            // page; a few pages and their WebSockets fit).
            maxClientsPerAddress: max(1, settings.maxClients / 2),
            serve: { channel, _, peer in
                channel.eventLoop.makeCompletedFuture { try server.serve(channel, peer: peer, access: access) }
            })
    }

    private func serve(_ channel: any Channel, peer: ClientPeer, access: WebAccess) throws {
        let handler = WebRequestHandler(
            .init(
                page: .shared, access: access, art: { request in await art(request, peer: peer) },
                peer: peer.description, logger: logger))
        let rpc = self.rpc
        let upgrader = NIOWebSocketServerUpgrader(
            maxFrameSize: rpc.maxLineLength,
            automaticErrorHandling: true,
            shouldUpgrade: { channel, head in
                // Anything refused here is answered by the request handler, which says why.
                let allowed =
                    WebRequestHandler.split(head.uri).path == "/rpc" && access.allowsHost(head) && WebAccess.isSameOrigin(head)
                    && access.allows(head)
                return channel.eventLoop.makeSucceededFuture(allowed ? HTTPHeaders() : nil)
            },
            upgradePipelineHandler: { channel, head in
                let level = access.level(head)
                return channel.eventLoop.makeCompletedFuture {
                    // A message sent in fragments is put together first, within the same bound.
                    try channel.pipeline.syncOperations.addHandlers(
                        MaskedFramesOnly(),
                        NIOWebSocketFrameAggregator(
                            minNonFinalFragmentSize: 0, maxAccumulatedFrameCount: 1024,
                            maxAccumulatedFrameSize: rpc.maxLineLength),
                        WebSocketLines())
                    try rpc.serve(channel, access: level, peer: peer)
                }
            })
        // Once upgraded, the page's requests are done with: the WebSocket's handlers take over.
        let requests = NIOLoopBound(handler, eventLoop: channel.eventLoop)
        // A connection that sends no request for a minute (a page's keep-alive, or a client
        // that opens and waits) is closed: one timer while it is open, none once it is a WebSocket.
        let idle = NIOLoopBound(IdleStateHandler(readTimeout: .seconds(60)), eventLoop: channel.eventLoop)
        // Reading stops while replies wait to be written (a client that sends and never reads);
        // the WebSocket's own rules take over once upgraded.
        let backPressure = NIOLoopBound(BackPressureHandler(), eventLoop: channel.eventLoop)
        let headDeadline = RequestHeadDeadline()
        handler.headDeadline = headDeadline
        let deadline = NIOLoopBound(headDeadline, eventLoop: channel.eventLoop)
        try channel.pipeline.syncOperations.configureHTTPServerPipeline(
            withServerUpgrade: (
                upgraders: [upgrader],
                completionHandler: { context in
                    context.pipeline.syncOperations.removeHandler(requests.value, promise: nil)
                    context.pipeline.syncOperations.removeHandler(idle.value, promise: nil)
                    context.pipeline.syncOperations.removeHandler(backPressure.value, promise: nil)
                    context.pipeline.syncOperations.removeHandler(deadline.value, promise: nil)
                }
            ))
        try channel.pipeline.syncOperations.addHandler(idle.value, position: .first)
        try channel.pipeline.syncOperations.addHandler(backPressure.value, position: .first)
        try channel.pipeline.syncOperations.addHandler(deadline.value, position: .first)
        try channel.pipeline.syncOperations.addHandler(handler)
    }

    /// A cover for `/art`: a path in the music directory, a queue item's file when it is in
    /// the music directory (found on the long replies' thread), or the cover a cast names for
    /// its item, fetched by the daemon: the page loads nothing from another host.
    private func art(_ request: ArtRequest, peer: ClientPeer) async -> ArtAnswer {
        if case .item(let id) = request, let cover = await player.castCover(forItem: id) {
            switch cover {
            case .found(let picture): return .found(bytes: picture.bytes, type: picture.mimeType)
            case .failed(let why): return .missing("the cast's cover cannot be had: \(why)")
            }
        }
        guard let root = library?.root else { return .missing("no music directory, so no covers") }
        let path: String
        switch request {
        case .uri(let uri):
            do throws(LibraryFilterSyntaxError) { path = try LibraryFilterSyntax.baseDirectory(uri) } catch {
                return .refused("'\(uri)' is not a path in the music directory")
            }
        case .item(let id):
            guard let item = player.queue.item(id: id) else { return .missing("no queue item \(id)") }
            let file = item.url.path
            guard item.url.isFileURL, file.hasPrefix(root + "/") else {
                return .missing("queue item \(id) is not a file of the music directory")
            }
            path = String(file.dropFirst(root.count + 1))
        }
        let sources = self.sources
        let found: Result<(bytes: [UInt8], type: String?, source: String)?, any Error> = await longReplies.encode {
            Result { try LibraryArt.find(path, root: root, sources: sources, for: peer) }
        }
        switch found {
        case .success(let art?): return .found(bytes: art.bytes, type: art.type)
        case .success(nil): return .missing("no cover for '\(path)'")
        case .failure(let failure as RPC.Failure):
            if case .object(let data)? = failure.data, case .string(let kind)? = data["kind"] {
                if kind == "not_found" { return .missing(failure.message) }
                if kind == "permission_denied" { return .refused(failure.message) }
            }
            return .failed(failure.message)
        case .failure(let error): return .failed("\(error)")
        }
    }
}
