import Foundation
import Logging
import NIOCore
import NIOHTTP1
import TonearmProtocol

/// One connection to the renderer's HTTP listener: the description and SCPDs (GET), control
/// (POST of a SOAP envelope) and eventing (SUBSCRIBE, UNSUBSCRIBE); nothing else. One request a
/// connection (answered with `Connection: close`): control points open one per action anyway,
/// and nothing is kept between them.
///
/// Hostile by default: a `Host` that is not one of the renderer's addresses is refused (a web
/// page whose name was made to point here cannot act), so is any request with an `Origin` (a
/// browser's); a body past 64 KiB gets 413 before it is read; the request must arrive whole
/// within 10 s of the connection.
final class RendererHTTPHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    struct Context: Sendable {
        var renderer: Renderer
        var events: EventHub
        var description: String
        /// Accepted `Host` values: the addresses served, with and without the port.
        var hosts: Set<String>
        var logger: Logger
    }

    static let maximumBody = 64 * 1024
    static let requestDeadline = TimeAmount.seconds(10)
    static let actionDeadline = TimeAmount.seconds(30)

    private let shared: Context
    private let peer: String
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []
    private var refused = false
    private var deadline: Scheduled<Void>?
    private var replyDeadline: Scheduled<Void>?
    /// An answer was written: nothing else is (the connection closes after it).
    private var replied = false

    init(_ shared: Context, peer: String) {
        self.shared = shared
        self.peer = peer
    }

    func channelActive(context: ChannelHandlerContext) {
        let channel = context.channel
        deadline = context.eventLoop.scheduleTask(in: Self.requestDeadline) { channel.close(promise: nil) }
        context.fireChannelActive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
        replyDeadline?.cancel()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !refused else { return }
        switch unwrapInboundIn(data) {
        case .head(let request):
            // One request a connection: a second (pipelined) one is not read.
            guard head == nil else {
                refused = true
                context.close(promise: nil)
                return
            }
            head = request
            if let refusal = refusal(request) {
                refused = true
                respond(context, refusal.status, body: refusal.text, type: "text/plain")
            }
        case .body(var part):
            guard head != nil else { return }
            if body.count + part.readableBytes > Self.maximumBody {
                refused = true
                respond(context, .payloadTooLarge, body: "a request body is at most 64 KiB\n", type: "text/plain")
                return
            }
            body += part.readBytes(length: part.readableBytes) ?? []
        case .end:
            guard let request = head else { return }
            deadline?.cancel()
            deadline = nil
            route(context, request)
        }
    }

    private func refusal(_ request: HTTPRequestHead) -> (status: HTTPResponseStatus, text: String)? {
        guard let host = request.headers.first(name: "host")?.lowercased(), shared.hosts.contains(host) else {
            return (.forbidden, "this renderer answers only at its own addresses\n")
        }
        if request.headers.contains(name: "origin") { return (.forbidden, "requests from web pages are refused\n") }
        if let length = request.headers.first(name: "content-length").flatMap(Int.init), length > Self.maximumBody {
            return (.payloadTooLarge, "a request body is at most 64 KiB\n")
        }
        return nil
    }

    private func route(_ context: ChannelHandlerContext, _ request: HTTPRequestHead) {
        let path = String(request.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
        let service = RendererService.allCases.first { path == $0.scpdPath || path == $0.controlPath || path == $0.eventPath }
        switch (request.method, path) {
        case (.GET, RendererDescription.path), (.HEAD, RendererDescription.path):
            respond(context, .ok, body: shared.description, type: "text/xml; charset=\"utf-8\"", headOnly: request.method == .HEAD)
        case (.GET, _) where service != nil && path == service!.scpdPath:
            respond(context, .ok, body: service!.scpd, type: "text/xml; charset=\"utf-8\"")
        case (.POST, _) where service != nil && path == service!.controlPath:
            control(context, request, service: service!)
        case (.SUBSCRIBE, _) where service != nil && path == service!.eventPath:
            subscribe(context, request, service: service!)
        case (.UNSUBSCRIBE, _) where service != nil && path == service!.eventPath:
            unsubscribe(context, request)
        default:
            let known = path == RendererDescription.path || service != nil
            respond(
                context, known ? .methodNotAllowed : .notFound, body: known ? "method not allowed\n" : "not found\n", type: "text/plain")
        }
    }

    private func control(_ context: ChannelHandlerContext, _ head: HTTPRequestHead, service: RendererService) {
        let request: SOAPRequest
        do {
            request = try SOAPRequest.parse(body, soapAction: head.headers.first(name: "soapaction"), service: service)
        } catch {
            fault(context, error, action: "?")
            return
        }
        let renderer = shared.renderer
        let peer = self.peer
        let loop = context.eventLoop
        let bound = NIOLoopBound((self, context), eventLoop: loop)
        // The action has 30 s (UPnP's limit for a control point's wait); past it the answer is
        // a fault, and what the action says later is dropped.
        replyDeadline = loop.scheduleTask(in: Self.actionDeadline) {
            let (handler, context) = bound.value
            guard !handler.replied else { return }
            handler.fault(context, .actionFailed("no answer within 30 s"), action: request.action)
        }
        Task {
            let outcome: Result<[(String, String)], UPnPError>
            do throws(UPnPError) {
                outcome = .success(try await renderer.perform(service, request, from: peer))
            } catch {
                outcome = .failure(error)
            }
            let ended = outcome
            loop.execute {
                let (handler, context) = bound.value
                handler.replyDeadline?.cancel()
                guard !handler.replied else { return }
                switch ended {
                case .success(let outputs):
                    handler.respond(
                        context, .ok, body: SOAPReply.response(service: service, action: request.action, outputs: outputs),
                        type: "text/xml; charset=\"utf-8\"", extra: [("EXT", "")])
                case .failure(let error):
                    handler.fault(context, error, action: request.action)
                }
            }
        }
    }

    private func fault(_ context: ChannelHandlerContext, _ error: UPnPError, action: String) {
        shared.logger.notice(
            "UPnP action refused",
            metadata: ["peer": "\(peer)", "action": "\(action)", "code": "\(error.code)", "why": "\(error.description)"])
        respond(context, .internalServerError, body: SOAPReply.fault(error), type: "text/xml; charset=\"utf-8\"")
    }

    private func subscribe(_ context: ChannelHandlerContext, _ head: HTTPRequestHead, service: RendererService) {
        let headers = head.headers
        let timeout = Self.timeout(headers.first(name: "timeout"))
        if let sid = headers.first(name: "sid") {
            guard !headers.contains(name: "nt"), !headers.contains(name: "callback") else {
                respond(context, .badRequest, body: "SID with NT or CALLBACK\n", type: "text/plain")
                return
            }
            do {
                let granted = try shared.events.renew(sid, timeout: timeout)
                respond(context, .ok, body: "", type: nil, extra: [("SID", sid), ("TIMEOUT", "Second-\(granted)")])
            } catch {
                respond(context, .preconditionFailed, body: "", type: nil)
            }
            return
        }
        guard headers.first(name: "nt") == "upnp:event", let callbackHeader = headers.first(name: "callback") else {
            respond(context, .preconditionFailed, body: "", type: nil)
            return
        }
        guard let callback = Self.callback(callbackHeader, peer: peer) else {
            respond(
                context, .preconditionFailed, body: "the callback must be an http URL at the subscriber's own address\n", type: "text/plain"
            )
            return
        }
        do {
            let (sid, granted) = try shared.events.subscribe(service, callback: callback, timeout: timeout)
            respond(context, .ok, body: "", type: nil, extra: [("SID", sid), ("TIMEOUT", "Second-\(granted)")])
        } catch {
            respond(context, .serviceUnavailable, body: "too many subscriptions\n", type: "text/plain")
        }
    }

    private func unsubscribe(_ context: ChannelHandlerContext, _ head: HTTPRequestHead) {
        guard let sid = head.headers.first(name: "sid"), (try? shared.events.unsubscribe(sid)) != nil else {
            respond(context, .preconditionFailed, body: "", type: nil)
            return
        }
        respond(context, .ok, body: "", type: nil)
    }

    /// `Second-N` (or `infinite`, granted as the longest).
    static func timeout(_ header: String?) -> Int {
        guard let header = header?.lowercased() else { return EventHub.maximumTimeout }
        if header.hasPrefix("second-"), let seconds = Int(header.dropFirst(7)) { return seconds }
        return EventHub.maximumTimeout
    }

    /// The first URL of a CALLBACK header, if it is `http://` at the subscriber's own address:
    /// events go nowhere a subscriber could not receive them itself.
    static func callback(_ header: String, peer: String) -> EventHub.Callback? {
        guard let open = header.firstIndex(of: "<"), let close = header[open...].firstIndex(of: ">") else { return nil }
        let text = String(header[header.index(after: open)..<close])
        guard let components = URLComponents(string: text), components.scheme?.lowercased() == "http", let host = components.host,
            host == peer
        else { return nil }
        let port = components.port ?? 80
        guard (1...65535).contains(port) else { return nil }
        // As sent, still percent-encoded: nothing decoded reaches the NOTIFY's request line.
        let encoded = components.percentEncodedPath + (components.percentEncodedQuery.map { "?" + $0 } ?? "")
        guard encoded.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { return nil }
        let path = encoded.isEmpty ? "/" : encoded
        return EventHub.Callback(host: host, port: port, path: path)
    }

    private func respond(
        _ context: ChannelHandlerContext, _ status: HTTPResponseStatus, body text: String, type: String?,
        headOnly: Bool = false, extra: [(String, String)] = []
    ) {
        guard !replied else { return }
        replied = true
        var headers = HTTPHeaders()
        if let type { headers.add(name: "Content-Type", value: type) }
        headers.add(name: "Content-Length", value: "\(text.utf8.count)")
        headers.add(name: "Server", value: RendererHTTPHandler.server)
        headers.add(name: "Connection", value: "close")
        for (name, value) in extra { headers.add(name: name, value: value) }
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))), promise: nil)
        if !headOnly, !text.isEmpty {
            var buffer = context.channel.allocator.buffer(capacity: text.utf8.count)
            buffer.writeString(text)
            context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
        }
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
    }

    /// UDA 1.1's form, as BOOTID.UPNP.ORG is sent: OS/version UPnP/1.1 product/version.
    static let server = "Linux/1 UPnP/1.1 tonearmd/\(TonearmVersion.string)"
}
