import NIOCore
import TonearmFrontEnd
import TonearmProtocol

/// One JSON-RPC client's side of the conversation, served in order by its
/// `OrderedRequestHandler` (on the connection's event loop). Requests that need no waiting are
/// answered right here, with no thread hop; `load`, `seek` and `retry` run in a task and their
/// answer is written back on the event loop, before the next request is served.
final class RPCSession: RequestSession {
    private let router: RequestRouter
    let client: ClientSession
    private let maxLineLength: Int
    private let eventLoop: any EventLoop
    /// Set by `start`; the handler owns this session, so the session holds it weakly.
    private weak var connection: (any RequestConnection)?

    init(router: RequestRouter, client: ClientSession, maxLineLength: Int, eventLoop: any EventLoop) {
        self.router = router
        self.client = client
        self.maxLineLength = maxLineLength
        self.eventLoop = eventLoop
    }

    var waitsForNews: Bool { client.isSubscribed }

    func start(_ connection: any RequestConnection) {
        self.connection = connection
        // Events come from the player's tasks: each is written on the event loop, through the
        // request path, in the order handed on. The client holds this closure and this session
        // holds the client: the session is held weakly, or neither would ever go.
        let eventLoop = self.eventLoop
        let bound = NIOLoopBound(WeakSession(session: self), eventLoop: eventLoop)
        client.attach { line in
            eventLoop.execute { bound.value.session?.connection?.writeNews(line) }
        }
    }

    func connectionEnded() {
        client.endSubscriptions()
        client.attach(nil)
    }

    private struct WeakSession {
        weak var session: RPCSession?
    }

    func serve(_ line: InboundLine, _ connection: any RequestConnection) -> RequestServed {
        let request: RPC.Request
        switch line {
        case .tooLong(let limit):
            connection.write(
                RPCFraming.line(
                    RPC.response(
                        id: .null,
                        error: RPC.Failure(
                            .invalidRequest, "invalid request: line longer than \(limit) bytes (limit \(maxLineLength))"))))
            return .answered
        case .line(let buffer):
            let parsed = buffer.withUnsafeReadableBytes { RPC.parseRequest($0) }
            switch parsed {
            case .failure(let bad):
                if let id = bad.id { connection.write(RPCFraming.line(RPC.response(id: id, error: bad.failure))) }
                return .answered
            case .success(let value):
                request = value
            }
        }
        if let answer = router.answerNow(request, session: client) {
            reply(request, with: answer, connection)
            return .answered
        }
        let router = self.router
        let client = self.client
        let eventLoop = self.eventLoop
        let bound = NIOLoopBound(self, eventLoop: eventLoop)
        Task {
            let answer = await router.answerLater(request, session: client)
            eventLoop.execute {
                let session = bound.value
                guard let connection = session.connection else { return }
                session.reply(request, with: answer, connection)
                connection.finished()
            }
        }
        return .waiting
    }

    private func reply(
        _ request: RPC.Request, with answer: Result<JSONValue, RPC.Failure>,
        _ connection: any RequestConnection
    ) {
        guard let id = request.id else { return }  // a notification gets no answer
        switch answer {
        case .success(let result): connection.write(RPCFraming.resultLine(id: id, result: result))
        case .failure(let failure): connection.write(RPCFraming.line(RPC.response(id: id, error: failure)))
        }
    }
}
