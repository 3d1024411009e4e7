import NIOCore

/// What the line framer hands on: a complete line, or word that a line was too long (its bytes
/// were dropped up to the next newline, so it never sits in memory whole).
package enum InboundLine: Sendable {
    case line(ByteBuffer)
    case tooLong(limit: Int)
}

/// Splits the byte stream at `\n` (a trailing `\r` is dropped), refusing lines over `maxLength`.
package struct LineDecoder: ByteToMessageDecoder {
    package typealias InboundOut = InboundLine

    package let maxLength: Int
    /// Hands on empty lines too (MPD's protocol closes the connection on one; JSON-RPC skips them).
    package let keepsEmptyLines: Bool
    /// Inside an over-long line: drop bytes until its newline.
    private var discarding = false
    /// Bytes already searched for a newline, so a long partial line is not searched again.
    private var scanned = 0

    package init(maxLength: Int, keepsEmptyLines: Bool = false) {
        self.maxLength = maxLength
        self.keepsEmptyLines = keepsEmptyLines
    }

    package mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        let view = buffer.readableBytesView
        guard let newline = view.dropFirst(scanned).firstIndex(of: UInt8(ascii: "\n")) else {
            scanned = view.count
            if buffer.readableBytes > maxLength {
                if !discarding { context.fireChannelRead(wrapInboundOut(.tooLong(limit: maxLength))) }
                discarding = true
                buffer.moveReaderIndex(forwardBy: buffer.readableBytes)
                scanned = 0
            }
            return .needMoreData
        }
        let length = newline - view.startIndex
        scanned = 0
        if discarding || length > maxLength {
            if !discarding { context.fireChannelRead(wrapInboundOut(.tooLong(limit: maxLength))) }
            discarding = false
            buffer.moveReaderIndex(forwardBy: length + 1)
            return .continue
        }
        var line = buffer.readSlice(length: length)!
        buffer.moveReaderIndex(forwardBy: 1)
        if line.readableBytesView.last == UInt8(ascii: "\r") { line = line.getSlice(at: line.readerIndex, length: line.readableBytes - 1)! }
        if line.readableBytes > 0 || keepsEmptyLines { context.fireChannelRead(wrapInboundOut(.line(line))) }
        return .continue
    }

    /// At end of input, a last line without a newline still counts.
    package mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        while try decode(context: context, buffer: &buffer) == .continue {}
        if buffer.readableBytes > 0 && !discarding {
            let line = buffer.readSlice(length: buffer.readableBytes)!
            context.fireChannelRead(wrapInboundOut(.line(line)))
        }
        buffer.moveReaderIndex(forwardBy: buffer.readableBytes)
        return .needMoreData
    }
}
