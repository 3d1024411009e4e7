import NIOCore
import NIOHTTP1

/// Closes a connection whose request (its head, and the small body a login has) does not
/// arrive whole within `limit` of its first byte. The idle timer alone counts from the last byte: a client that sends a header line every
/// 20 s would hold its place for ever, and 64 such clients would lock everyone out (slowloris).
/// Sits before the HTTP decoder (it sees bytes); the request handler says when a head arrived
/// and when its answer was sent, so a kept-alive connection waiting for its next request is
/// not timed until that request's first byte.
final class RequestHeadDeadline: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = NIOAny
    typealias OutboundOut = NIOAny

    static let limit = TimeAmount.seconds(10)

    private var awaitingHead = true
    private var timer: Scheduled<Void>?
    private var context: ChannelHandlerContext?

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        self.context = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if awaitingHead, timer == nil {
            let channel = context.channel
            timer = context.eventLoop.scheduleTask(in: Self.limit) { channel.close(promise: nil) }
        }
        context.fireChannelRead(data)
    }

    /// A request was read whole: no deadline until its answer is sent.
    func headArrived() {
        awaitingHead = false
        timer?.cancel()
        timer = nil
    }

    /// The answer was sent: the next request's head is timed from its first byte.
    func answered() {
        awaitingHead = true
    }
}
