import Logging
import NIOCore
import TonearmProtocol

/// What a protocol does with one client's lines (`RPCSession`, `MPDSession`). Called on the
/// connection's event loop only, by its `OrderedRequestHandler`.
package protocol RequestSession: AnyObject {
    /// The connection is up (MPD greets here).
    func start(_ connection: any RequestConnection)
    /// Serves one line through `connection` (writes its reply, or none). `.waiting`: the reply
    /// comes later, and the session then calls `connection.finished()` on the event loop; no other
    /// line is served meanwhile.
    func serve(_ line: InboundLine, _ connection: RequestConnection) -> RequestServed
    /// The client waits for news (MPD's `idle`, a JSON-RPC subscription): silence is expected,
    /// and the idle timeout does not apply.
    var waitsForNews: Bool { get }
    /// The connection is going away (closed by either side).
    func connectionEnded()
}

package enum RequestServed { case answered, waiting }

/// The limits every front-end applies to one client (`max_output_buffer_size`,
/// `connection_timeout` in `[control]` and `[mpd]`).
package struct ClientLimits: Sendable, Equatable {
    /// Replies written and not yet taken by the client past which it is dropped (MPD's
    /// `max_output_buffer_size`, 8 MiB by default).
    package var maxOutputBytes = 8 << 20
    /// A client that sends nothing this long, and waits for no news, is closed (MPD's
    /// `connection_timeout`, 60 s). nil: never.
    package var idleTimeout: TimeAmount? = .seconds(60)

    package init() {}
}

/// What a session sees of its connection (on the event loop only).
package protocol RequestConnection: AnyObject {
    func write(_ buffer: ByteBuffer)
    func writeNews(_ buffer: ByteBuffer)
    func writePart(_ buffer: ByteBuffer, whenReady ready: @escaping (Bool) -> Void)
    func writeAndClose(_ buffer: ByteBuffer?)
    func close(because reason: String)
    func finished()
    func heard()
}

extension ChannelPipeline.SynchronousOperations {
    /// Puts the request path in a new connection's pipeline: lines of at most `maxLineLength`
    /// bytes, served in order by `session`. The one way every front-end serves its clients.
    package func addRequestPath<Session: RequestSession>(
        _ session: Session, maxLineLength: Int, keepsEmptyLines: Bool = false, limits: ClientLimits, logger: Logger,
        peer: ClientPeer, changes: ChangeDurability?
    ) throws {
        try addHandlers(
            ByteToMessageHandler(LineDecoder(maxLength: maxLineLength, keepsEmptyLines: keepsEmptyLines)),
            OrderedRequestHandler(
                session: session, limits: limits, logger: logger, peer: peer.description,
                changes: changes))
    }
}
