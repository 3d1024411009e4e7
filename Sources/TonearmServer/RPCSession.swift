import Logging
import NIOCore

/// Serves one client connection on its event loop. Requests that need no waiting are answered
/// right here, with no thread hop; `load`, `seek` and `retry` run in a task and their answer is
/// written back on the event loop. Answers keep the order of requests: while a waiting request
/// runs, later lines queue behind it. When the client half-closes, the connection closes once
/// every answer is written.
final class RPCConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = InboundLine
    typealias OutboundOut = ByteBuffer

    private let router: RequestRouter
    private let session: ClientSession
    private let maxLineLength: Int
    // Event-loop state.
    private var waiting = false
    private var queued = CircularBuffer<InboundLine>()
    private var inputClosed = false

    init(router: RequestRouter, session: ClientSession, maxLineLength: Int) {
        self.router = router
        self.session = session
        self.maxLineLength = maxLineLength
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let line = unwrapInboundIn(data)
        if waiting {
            queued.append(line)
        } else {
            handle(line, context: context)
        }
    }

    private func handle(_ line: InboundLine, context: ChannelHandlerContext) {
        let request: RPC.Request
        switch line {
        case .tooLong(let limit):
            write(RPC.response(id: .null, error: RPC.Failure(
                .invalidRequest, "invalid request: line longer than \(limit) bytes (limit \(maxLineLength))")), context: context)
            return
        case .line(let buffer):
            let parsed = buffer.withUnsafeReadableBytes { RPC.parseRequest($0) }
            switch parsed {
            case .failure(let bad):
                write(RPC.response(id: bad.id, error: bad.failure), context: context)
                return
            case .success(let value):
                request = value
            }
        }
        if let answer = router.answerNow(request, session: session) {
            answerRequest(request, with: answer, context: context)
            return
        }
        waiting = true
        let router = self.router
        let eventLoop = context.eventLoop
        let bound = NIOLoopBound((handler: self, context: context), eventLoop: eventLoop)
        Task {
            let answer = await router.answerLater(request)
            eventLoop.execute {
                let (handler, context) = bound.value
                handler.waitingRequestFinished(request, answer: answer, context: context)
            }
        }
    }

    private func waitingRequestFinished(_ request: RPC.Request, answer: Result<JSONValue, RPC.Failure>,
                                        context: ChannelHandlerContext) {
        waiting = false
        answerRequest(request, with: answer, context: context)
        while !waiting, let next = queued.popFirst() { handle(next, context: context) }
        closeIfDone(context: context)
    }

    private func answerRequest(_ request: RPC.Request, with answer: Result<JSONValue, RPC.Failure>,
                               context: ChannelHandlerContext) {
        guard let id = request.id else { return }  // a notification gets no answer
        switch answer {
        case .success(let result):
            context.writeAndFlush(wrapOutboundOut(RPCFraming.resultLine(id: id, result: result)), promise: nil)
        case .failure(let failure): write(RPC.response(id: id, error: failure), context: context)
        }
    }

    private func write(_ message: JSONValue, context: ChannelHandlerContext) {
        context.writeAndFlush(wrapOutboundOut(RPCFraming.line(message)), promise: nil)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .inputClosed = event as? ChannelEvent {
            inputClosed = true
            closeIfDone(context: context)
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }

    /// After a half-close: close once nothing is waiting or queued (the answers are flushed first).
    private func closeIfDone(context: ChannelHandlerContext) {
        guard inputClosed, !waiting, queued.isEmpty else { return }
        session.endSubscriptions()
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(ByteBuffer())).whenComplete { _ in channel.close(promise: nil) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        session.endSubscriptions()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        session.close()
    }
}
