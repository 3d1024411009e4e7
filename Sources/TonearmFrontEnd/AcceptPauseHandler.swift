import Logging
import NIOCore

#if canImport(Glibc)
    import Glibc
#endif

/// Stops accepting for a moment when accept fails for want of resources (out of file
/// descriptors, or of kernel memory), so a full descriptor table does not spin a core.
///
/// Written by hand because NIO's `AcceptBackoffHandler` cannot stop that spin (NIO 2.101): a
/// failed accept leaves the server channel's read pending, so the channel stays registered for
/// readable and epoll, level-triggered, reports the waiting connection again at once, whatever
/// the handler does with later `read` calls. Turning `autoRead` off unregisters the channel; a
/// timer on the event loop turns it on again. Runs on the server channel's event loop only.
final class AcceptPauseHandler: ChannelInboundHandler {
    typealias InboundIn = Channel
    typealias InboundOut = Channel

    private let pause: TimeAmount
    private let logger: Logger
    private var paused = false
    /// Whether this shortage was logged: once per shortage, not once per retry.
    private var reported = false

    init(pause: TimeAmount = .milliseconds(250), logger: Logger) {
        self.pause = pause
        self.logger = logger
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if reported {
            reported = false
            logger.notice("accepting clients again")
        }
        context.fireChannelRead(data)
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        guard let ioError = error as? IOError, Self.isShortage(ioError.errnoCode) else {
            context.fireErrorCaught(error)
            return
        }
        if !reported {
            reported = true
            logger.warning(
                "cannot accept a client: \(ioError.description); retrying every \(pause.nanoseconds / 1_000_000) ms",
                metadata: ["errno": "\(ioError.errnoCode)"])
        }
        guard !paused, let options = context.channel.syncOptions else { return }
        paused = true
        try? options.setOption(.autoRead, value: false)
        let channel = context.channel
        context.eventLoop.assumeIsolated().scheduleTask(in: pause) { [self] in
            paused = false
            try? channel.syncOptions?.setOption(.autoRead, value: true)
        }
    }

    private static func isShortage(_ code: Int32) -> Bool {
        code == EMFILE || code == ENFILE || code == ENOBUFS || code == ENOMEM
    }
}
