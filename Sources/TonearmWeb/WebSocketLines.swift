import NIOCore
import NIOWebSocket

/// Between a WebSocket and the request path: each text message in is one line (the request
/// path then serves it exactly as a line on the Unix socket), each line out is one text message.
/// Pings are answered; a close from the page is the end of its input, as a half-close is on a
/// socket, so the replies still due are sent before the close is returned.
final class WebSocketLines: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = WebSocketFrame
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = WebSocketFrame

    private var closeSent = false
    private var inputEnded = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .text:
            guard !inputEnded else { return }
            var line = frame.unmaskedData
            // JSON needs no line break (one inside a string is escaped), so a message laid out
            // on several lines is one line here.
            line.withUnsafeMutableReadableBytes { bytes in
                for index in bytes.indices where bytes[index] == UInt8(ascii: "\n") || bytes[index] == UInt8(ascii: "\r") {
                    bytes[index] = UInt8(ascii: " ")
                }
            }
            line.writeInteger(UInt8(ascii: "\n"))
            context.fireChannelRead(wrapInboundOut(line))
        case .binary:
            sendClose(context, code: .unacceptableData, then: true)
        case .ping:
            var pong = context.channel.allocator.buffer(capacity: frame.data.readableBytes)
            var payload = frame.unmaskedData
            pong.writeBuffer(&payload)
            context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .pong, data: pong)), promise: nil)
        case .connectionClose:
            guard !inputEnded else { return }
            inputEnded = true
            context.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        default:
            break  // pongs; fragments arrive whole from the aggregator before this handler
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        var buffer = unwrapOutboundIn(data)
        // Each line (JSON-RPC writes whole lines, sometimes several at once) one message.
        var frames: [ByteBuffer] = []
        while let end = buffer.readableBytesView.firstIndex(of: UInt8(ascii: "\n")) {
            let length = end - buffer.readerIndex
            if length > 0, let line = buffer.readSlice(length: length) { frames.append(line) }
            buffer.moveReaderIndex(forwardBy: 1)
        }
        if buffer.readableBytes > 0 { frames.append(buffer) }
        guard let last = frames.popLast() else {
            promise?.succeed()
            return
        }
        for line in frames { context.write(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .text, data: line)), promise: nil) }
        context.write(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .text, data: last)), promise: promise)
    }

    /// The request path closes the connection (done after the page's close, or dropped): the
    /// page hears a close message first.
    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        guard mode == .all, !closeSent else { return context.close(mode: mode, promise: promise) }
        closeSent = true
        var data = context.channel.allocator.buffer(capacity: 2)
        data.write(webSocketErrorCode: .normalClosure)
        context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: data)), promise: nil)
        context.close(mode: mode, promise: promise)
    }

    private func sendClose(_ context: ChannelHandlerContext, code: WebSocketErrorCode, then close: Bool) {
        guard !closeSent else { return }
        closeSent = true
        var data = context.channel.allocator.buffer(capacity: 2)
        data.write(webSocketErrorCode: code)
        context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: data)), promise: nil)
        if close { context.close(promise: nil) }
    }
}
