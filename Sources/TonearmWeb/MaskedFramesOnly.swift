import NIOCore
import NIOWebSocket

/// A client's frames must be masked (RFC 6455 §5.1): one that is not is answered with a close
/// (1002, protocol error) and the connection closed. It sits before the aggregator, which
/// drops the mask when it puts fragments together.
final class MaskedFramesOnly: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = WebSocketFrame
    typealias InboundOut = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    private var refused = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !refused else { return }
        guard unwrapInboundIn(data).maskKey != nil else {
            refused = true
            var reason = context.channel.allocator.buffer(capacity: 2)
            reason.write(webSocketErrorCode: .protocolError)
            // Closed from here (not from the tail), so that no other close message follows this one.
            let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
            context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: reason)))
                .whenComplete { _ in bound.value.close(promise: nil) }
            return
        }
        context.fireChannelRead(data)
    }
}
