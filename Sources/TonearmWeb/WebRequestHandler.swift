import Foundation
import Logging
import NIOCore
import NIOHTTP1
import TonearmFrontEnd

/// What `/art` asks for: a library file or directory (a path in the music directory), or the
/// queue item with this id.
enum ArtRequest: Sendable {
    case uri(String)
    case item(Int)
}

enum ArtAnswer: Sendable {
    case found(bytes: [UInt8], type: String?)
    case missing(String)
    case refused(String)
    case failed(String)
}

/// The web remote's plain HTTP requests (the WebSocket's upgrade is the upgrader's): the page's
/// files, covers, and the password's check. Requests on a connection are answered in order
/// (NIO's pipelining handler holds the next until this one's answer is written); a body is
/// only a login's, a few bytes, so anything over `maxBodyBytes` is refused and the connection
/// closed without reading more.
final class WebRequestHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    static let maxBodyBytes = 4096

    struct Context: Sendable {
        let page: WebPage
        let access: WebAccess
        let art: @Sendable (ArtRequest) async -> ArtAnswer
        let peer: String
        let logger: Logger
    }

    private let shared: Context
    private var head: HTTPRequestHead?
    private var body: ByteBuffer?
    /// Refused mid-request (too large): the rest of it is not read.
    private var refused = false
    /// A request whose answer is still being made (a cover, off the event loop).
    private var answering = false
    /// The client closed its side (connections allow half-closure): close ours once answered.
    private var inputClosed = false
    /// A request held until the replies before it have left (the channel is writable again): a
    /// client that pipelines requests and reads nothing gets one reply buffered, not thousands.
    private var held: (head: HTTPRequestHead, body: ByteBuffer?)?
    /// The channel took output since the last idle event (it became writable again): a client
    /// taking its replies, however slowly, is not idle; one that neither sends nor takes is.
    private var outputTaken = false

    /// Told when a head arrived and when its answer was sent (set before the first read).
    var headDeadline: RequestHeadDeadline?

    init(_ shared: Context) {
        self.shared = shared
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body = nil
            refused = false
            if let length = head.headers.first(name: "content-length").flatMap(Int.init), length > Self.maxBodyBytes {
                refuseLarge(context, head)
            }
        case .body(var part):
            guard !refused, let head else { return }
            if (body?.readableBytes ?? 0) + part.readableBytes > Self.maxBodyBytes { return refuseLarge(context, head) }
            if body == nil { body = context.channel.allocator.buffer(capacity: part.readableBytes) }
            body?.writeBuffer(&part)
        case .end:
            // The whole request is in (a body trickled byte by byte is timed too).
            headDeadline?.headArrived()
            guard !refused, let head else { return }
            self.head = nil
            if context.channel.isWritable { route(context, head, body) } else { held = (head, body) }
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { outputTaken = true }
        if context.channel.isWritable, let held {
            self.held = nil
            route(context, held.head, held.body)
        }
        context.fireChannelWritabilityChanged()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let idle = event as? IdleStateHandler.IdleStateEvent, idle == .read {
            // Silent for the idle time: closed unless a request is being answered or the client
            // took output meanwhile (a request held back for a client that reads nothing is not).
            let taken = outputTaken
            outputTaken = false
            if head == nil, !answering, !taken { context.close(promise: nil) }
            return
        }
        if case .inputClosed = event as? ChannelEvent {
            inputClosed = true
            if head == nil, !answering, held == nil { context.close(promise: nil) }
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    /// A request NIO could not parse (oversized or malformed headers) was answered 400 with
    /// `Connection: close` by NIO's error handler: the connection is closed, as it says.
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if error is HTTPParserError {
            context.close(promise: nil)
            return
        }
        context.fireErrorCaught(error)
    }

    private func refuseLarge(_ context: ChannelHandlerContext, _ head: HTTPRequestHead) {
        refused = true
        respond(context, head, .payloadTooLarge, text: "a request body here is at most \(Self.maxBodyBytes) bytes", close: true)
    }

    private func route(_ context: ChannelHandlerContext, _ head: HTTPRequestHead, _ body: ByteBuffer?) {
        guard shared.access.allowsHost(head) else {
            let name = head.headers.first(name: "host") ?? "(none)"
            shared.logger.warning(
                "web remote: refused a request for another host name", metadata: ["host": "\(name)", "peer": "\(shared.peer)"])
            return respond(
                context, head, .forbidden,
                text: "this server does not answer to the name '\(name)': use its address, or list the name in http.allowed_hosts")
        }
        let (path, query) = Self.split(head.uri)
        switch path {
        case "/rpc":
            // The upgrader let it through: not an upgrade, or one it refused.
            if head.headers.first(name: "upgrade")?.lowercased() != "websocket" {
                return respond(
                    context, head, .upgradeRequired, text: "/rpc is a WebSocket (JSON-RPC, as on the control socket)",
                    extra: [("Upgrade", "websocket")])
            }
            if !WebAccess.isSameOrigin(head) {
                return respond(context, head, .forbidden, text: "a page of another site may not control this player")
            }
            return respond(context, head, .unauthorized, text: "the password is needed first (POST /login)")
        case "/login":
            guard head.method == .POST else {
                return respond(context, head, .methodNotAllowed, text: "POST the password", extra: [("Allow", "POST")])
            }
            return login(context, head, body)
        case "/session":
            guard head.method == .GET || head.method == .HEAD else { return notGetOrHead(context, head) }
            let level = shared.access.level(head)
            let json = "{\"password\":\(shared.access.password != nil),\"authorized\":\(level != .none),\"read_only\":\(level == .read)}"
            return respond(context, head, .ok, bytes: Array(json.utf8), type: "application/json", extra: [("Cache-Control", "no-store")])
        default:
            guard head.method == .GET || head.method == .HEAD else { return notGetOrHead(context, head) }
            if path == "/art" || path.hasPrefix("/art/") { return art(context, head, path: path, query: query) }
            guard let file = shared.page.files[path == "/" ? "/index.html" : path] else {
                return respond(context, head, .notFound, text: "no such page: \(path)")
            }
            serve(context, head, file)
        }
    }

    private func notGetOrHead(_ context: ChannelHandlerContext, _ head: HTTPRequestHead) {
        respond(context, head, .methodNotAllowed, text: "\(head.method) is not served here", extra: [("Allow", "GET, HEAD")])
    }

    private func serve(_ context: ChannelHandlerContext, _ head: HTTPRequestHead, _ file: WebPage.File) {
        var extra = [("ETag", file.etag), ("Cache-Control", "no-cache"), ("Vary", "Accept-Encoding")]
        if head.headers[canonicalForm: "if-none-match"].contains(where: { $0 == file.etag || $0 == "*" }) {
            return respond(context, head, .notModified, bytes: [], type: nil, extra: extra)
        }
        let gzipped = head.headers[canonicalForm: "accept-encoding"].contains { $0.lowercased().hasPrefix("gzip") } ? file.gzipped : nil
        if gzipped != nil { extra.append(("Content-Encoding", "gzip")) }
        respond(context, head, .ok, bytes: gzipped ?? file.body, type: file.type, extra: extra)
    }

    private func login(_ context: ChannelHandlerContext, _ head: HTTPRequestHead, _ body: ByteBuffer?) {
        guard WebAccess.isSameOrigin(head) else { return respond(context, head, .forbidden, text: "a page of another site may not log in") }
        let object = body.flatMap { try? JSONSerialization.jsonObject(with: Data($0.readableBytesView)) as? [String: Any] }
        guard let attempt = object?["password"] as? String else {
            return respond(context, head, .badRequest, text: "send {\"password\": \"…\"}")
        }
        switch shared.access.login(attempt, from: Self.address(shared.peer)) {
        case .accepted(let cookie):
            respond(context, head, .noContent, bytes: [], type: nil, extra: cookie.isEmpty ? [] : [("Set-Cookie", cookie)])
        case .refused:
            shared.logger.warning("web remote: wrong password", metadata: ["peer": "\(shared.peer)"])
            respond(context, head, .unauthorized, text: "wrong password")
        case .wait(let seconds):
            respond(
                context, head, .tooManyRequests, text: "too many wrong passwords: try again in \(seconds) s",
                extra: [("Retry-After", String(seconds))])
        }
    }

    private func art(_ context: ChannelHandlerContext, _ head: HTTPRequestHead, path: String, query: String?) {
        guard shared.access.allows(head) else { return respond(context, head, .unauthorized, text: "the password is needed first") }
        let request: ArtRequest
        if path == "/art" {
            guard let uri = Self.parameter("uri", in: query) else { return respond(context, head, .badRequest, text: "/art?uri=PATH") }
            request = .uri(uri)
        } else {
            guard let id = Int(path.dropFirst("/art/".count)), id >= 0 else {
                return respond(context, head, .badRequest, text: "/art/ID names a queue item by its id")
            }
            request = .item(id)
        }
        // Found off the event loop: reading a cover or a song's picture touches the disk.
        let loop = context.eventLoop
        let bound = NIOLoopBound((handler: self, context: context), eventLoop: loop)
        let find = shared.art
        answering = true
        Task {
            let answer = await find(request)
            loop.execute {
                let (handler, context) = bound.value
                handler.answering = false
                switch answer {
                case .found(let bytes, let type):
                    let etag = WebPage.etag(bytes)
                    let extra = [("ETag", etag), ("Cache-Control", "no-cache")]
                    if head.headers[canonicalForm: "if-none-match"].contains(where: { $0 == etag }) {
                        return handler.respond(context, head, .notModified, bytes: [], type: nil, extra: extra)
                    }
                    handler.respond(context, head, .ok, bytes: bytes, type: type ?? "application/octet-stream", extra: extra)
                case .missing(let message):
                    // `?fallback`: the page's own icon instead of a 404 (the page's cover never fails).
                    if query?.split(separator: "&").contains("fallback") == true, let icon = handler.shared.page.files["/icon.svg"] {
                        return handler.serve(context, head, icon)
                    }
                    handler.respond(context, head, .notFound, text: message)
                case .refused(let message): handler.respond(context, head, .forbidden, text: message)
                case .failed(let message): handler.respond(context, head, .internalServerError, text: message)
                }
            }
        }
    }

    private func respond(
        _ context: ChannelHandlerContext, _ head: HTTPRequestHead, _ status: HTTPResponseStatus, text: String,
        extra: [(String, String)] = [], close: Bool = false
    ) {
        respond(context, head, status, bytes: Array((text + "\n").utf8), type: "text/plain; charset=utf-8", extra: extra, close: close)
    }

    private func respond(
        _ context: ChannelHandlerContext, _ head: HTTPRequestHead, _ status: HTTPResponseStatus, bytes: [UInt8],
        type: String?, extra: [(String, String)] = [], close: Bool = false
    ) {
        let keepAlive = head.isKeepAlive && !close
        var headers = HTTPHeaders(extra)
        if let type { headers.add(name: "Content-Type", value: type) }
        headers.add(name: "Content-Length", value: String(status == .notModified || status == .noContent ? 0 : bytes.count))
        headers.add(name: "X-Content-Type-Options", value: "nosniff")
        headers.add(
            name: "Content-Security-Policy",
            value: "default-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'")
        headers.add(name: "Referrer-Policy", value: "no-referrer")
        if !keepAlive { headers.add(name: "Connection", value: "close") }
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: status, headers: headers))), promise: nil)
        if head.method != .HEAD, !bytes.isEmpty, status != .notModified, status != .noContent {
            context.write(wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: bytes)))), promise: nil)
        }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        headDeadline?.answered()
        if !keepAlive || inputClosed { context.close(promise: nil) }
    }

    static func split(_ uri: String) -> (path: String, query: String?) {
        guard let mark = uri.firstIndex(of: "?") else { return (uri, nil) }
        return (String(uri[..<mark]), String(uri[uri.index(after: mark)...]))
    }

    static func parameter(_ name: String, in query: String?) -> String? {
        guard let query else { return nil }
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, parts[0] == name else { continue }
            return String(parts[1]).replacingOccurrences(of: "+", with: " ").removingPercentEncoding
        }
        return nil
    }

    /// The peer's address without its port: wrong passwords count per machine.
    static func address(_ peer: String) -> String {
        guard let colon = peer.lastIndex(of: ":") else { return peer }
        return String(peer[..<colon])
    }
}
