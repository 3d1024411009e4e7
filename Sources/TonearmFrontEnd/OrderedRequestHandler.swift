import Logging
import NIOCore
import TonearmProtocol

/// One client's requests, served in order, on its event loop, for every protocol: the single
/// request path. In the manner of swift-nio's `HTTPServerPipelineHandler`, it stops reading
/// while a reply is pending: while a request waits (`.waiting`), while lines already read wait
/// their turn, and while the client does not take what was written (the channel is not
/// writable). A client that writes without reading meets back-pressure in its own socket, not
/// memory in the daemon. Past `maxOutputBytes` of unread output it is closed; silent past
/// `idleTimeout` (and not waiting for news), too. After a half-close it closes once every reply
/// is written.
///
/// A reply to a line that changed what the daemon keeps (the queue, options, volume) is held
/// until the change is durable (`ChangeDurability`): what the client has been told survives a crash.
/// Meanwhile the lines already read are served and their replies gathered behind it, so a
/// burst of edits costs one flush to disk, not one each.
///
/// It is the pipeline's last handler: `read` comes to it from the channel's auto-read and is held
/// here while reading must wait.
/// A connection's write buffer marks: past `high` bytes unsent the channel is not writable (the
/// handler stops serving and reading), below `low` it is again.
enum OutputMarks {
    static let high = 1024 * 1024
    static let low = 256 * 1024
}

final class OrderedRequestHandler<Session: RequestSession>: ChannelDuplexHandler, RequestConnection {
    typealias InboundIn = InboundLine
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let session: Session
    private let limits: ClientLimits
    private let logger: Logger
    private let peer: String
    /// The player's numbered changes; nil: nothing to wait for (tests of the handler alone).
    private let changes: ChangeDurability?

    // Event-loop state.
    private var context: ChannelHandlerContext?
    private var queued = CircularBuffer<InboundLine>()
    /// Where the connection stands and what it does with the line in hand (`RequestPathState`).
    private var state = RequestPathState.added
    /// A `read` arrived while reading had to wait: it is passed on once reading may go on. Not a
    /// stage of the connection but an outbound call put off (swift-nio's
    /// `HTTPServerPipelineHandler` keeps its `readPending` beside its state the same way).
    private var readHeld = false
    /// Replies gathered during a read burst (or while held until durable), written as one.
    private var gathered: ByteBuffer?
    /// Past this many gathered bytes they go to the channel at once, so that its writability
    /// (and so back-pressure) sees them.
    private static var gatherLimit: Int { 64 * 1024 }
    private var lastHeard = NIODeadline.now()
    private var idleCheck: Scheduled<Void>?
    /// Bytes handed to the channel so far, and how many of them had left its buffer at the last
    /// idle check: a client taking its reply, however slowly, is not silent.
    private var bytesWritten = 0
    private var bytesTakenAtCheck = 0
    /// The player's change number when the line being served began (or when output was last held).
    private var servedSince = 0
    /// Output is gathered, not written, until the changes up to this number are durable.
    private var heldUntil: Int?
    /// A long reply written in parts (`writePart`) waits for the client to take what was
    /// written: told true once it may make the next part, false if the connection is gone.
    private var partWaiter: ((Bool) -> Void)?

    init(session: Session, limits: ClientLimits, logger: Logger, peer: String, changes: ChangeDurability?) {
        self.session = session
        self.limits = limits
        self.logger = logger
        self.peer = peer
        self.changes = changes
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        servedSince = changes?.recorded() ?? 0
        scheduleIdleCheck(context: context)
        // Added to a connection already open (a WebSocket, after its upgrade): no
        // channelActive will come.
        if context.channel.isActive { startSession() }
    }

    func channelActive(context: ChannelHandlerContext) {
        startSession()
        context.fireChannelActive()
    }

    private func startSession() {
        guard state == .added else { return }
        move(to: .open(.idle))
        session.start(self)
    }

    /// Moves the connection to a later stage; a move back is a bug in this handler.
    private func move(to next: RequestPathState) {
        precondition(next.rank >= state.rank, "request path: \(state) → \(next)")
        state = next
    }

    /// What an open connection does with its lines; nil once it closes (or before it starts).
    private var line: RequestPathLine? {
        switch state {
        case .open(let line), .inputClosed(let line): line
        case .added, .closingAfterHeld, .closing: nil
        }
    }

    /// Sets what an open connection does with its lines (a closing one keeps closing).
    private func set(_ line: RequestPathLine) {
        switch state {
        case .open: state = .open(line)
        case .inputClosed: state = .inputClosed(line)
        case .added, .closingAfterHeld, .closing: break
        }
    }

    private var busy: Bool { line == .awaitingReply }
    private var closing: Bool { state.rank >= RequestPathState.closingAfterHeld.rank }

    func handlerRemoved(context: ChannelHandlerContext) {
        idleCheck?.cancel()
        idleCheck = nil
        self.context = nil
    }

    // MARK: Lines in, in order

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        lastHeard = .now()
        scheduleIdleCheck(context: context)
        queued.append(unwrapInboundIn(data))
        if line == .idle { set(.reading) }
        serveQueued(context: context)
        if line == .reading { set(.idle) }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        flushIfNeeded(context: context)
        context.fireChannelReadComplete()
    }

    private func serveQueued(context: ChannelHandlerContext) {
        while !busy, !closing, context.channel.isWritable, heldUntil == nil || (gathered?.readableBytes ?? 0) < Self.gatherLimit,
            let line = queued.popFirst()
        {
            servedSince = changes?.recorded() ?? 0
            if session.serve(line, self) == .waiting { set(.awaitingReply) }
            guard checkOutput(context: context) else { return }
        }
        closeIfDone(context: context)
    }

    /// A `.waiting` line's reply is written: the lines behind it go on, and silence counts
    /// from now (the idle check lapsed while the reply was awaited).
    func finished() {
        guard let context else { return }
        if busy { set(.idle) }
        heard()
        serveQueued(context: context)
        flushIfNeeded(context: context)
        releaseRead(context: context)
    }

    // MARK: Reading held while a reply is pending

    func read(context: ChannelHandlerContext) {
        if mayRead(context) {
            context.read()
        } else {
            readHeld = true
        }
    }

    private func mayRead(_ context: ChannelHandlerContext) -> Bool {
        !busy && !closing && heldUntil == nil && queued.isEmpty && context.channel.isWritable
    }

    private func releaseRead(context: ChannelHandlerContext) {
        guard readHeld, mayRead(context) else { return }
        readHeld = false
        context.read()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable {
            resumePart()
            serveQueued(context: context)
            flushIfNeeded(context: context)
            releaseRead(context: context)
        }
        context.fireChannelWritabilityChanged()
    }

    // MARK: Replies out

    /// Writes `buffer`: now, or with the rest of the read burst it answers, or once the changes
    /// made since the line began are durable.
    func write(_ buffer: ByteBuffer) {
        guard let context, !closing else { return }
        if let changes {
            let now = changes.recorded()
            if now != servedSince { hold(until: now) }
        }
        guard line == .reading || heldUntil != nil else {
            bytesWritten += buffer.readableBytes
            context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
            _ = checkOutput(context: context)
            return
        }
        if gathered == nil {
            gathered = buffer
        } else {
            var buffer = buffer
            gathered!.writeBuffer(&buffer)
        }
        if gathered!.readableBytes >= Self.gatherLimit { flushIfNeeded(context: context) }
    }

    /// Writes a line the client did not ask for (an event it subscribed to): at once, after
    /// what was written before, and never held until changes are durable (it tells what
    /// happened). It counts against `maxOutputBytes` as replies do: a client that stops reading
    /// its news is closed as one that stops reading its replies.
    func writeNews(_ buffer: ByteBuffer) {
        guard let context, !closing else { return }
        bytesWritten += buffer.readableBytes
        context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
        _ = checkOutput(context: context)
    }

    /// Writes one part of a long reply (the line stays being served), then calls `ready` once the
    /// client has taken enough of what was written that the next part may be made: the daemon
    /// holds about one part per such client, however long the reply. `ready(false)`: the
    /// connection is gone, make no more.
    func writePart(_ buffer: ByteBuffer, whenReady ready: @escaping (Bool) -> Void) {
        write(buffer)
        guard context != nil, !closing else { return ready(false) }
        partWaiter = ready
        resumePart()
    }

    private func resumePart() {
        guard let waiter = partWaiter, let context else { return }
        if closing {
            partWaiter = nil
            return waiter(false)
        }
        guard heldUntil == nil, context.channel.isWritable else { return }
        partWaiter = nil
        waiter(true)
    }

    /// Writes `buffer` (if any), then closes once it is flushed; nothing more is served.
    func writeAndClose(_ buffer: ByteBuffer?) {
        guard let context, !closing else { return }
        if let recorded = changes?.recorded(), recorded != servedSince { hold(until: recorded) }
        if heldUntil != nil {
            // After the held replies, once they may go.
            if var buffer {
                if gathered == nil { gathered = buffer } else { gathered!.writeBuffer(&buffer) }
            }
            move(to: .closingAfterHeld)
            queued.removeAll()
            return
        }
        close(context, after: buffer)
    }

    /// Writes what was gathered and `buffer`, then closes.
    private func close(_ context: ChannelHandlerContext, after buffer: ByteBuffer?) {
        flushIfNeeded(context: context)
        move(to: .closing)
        queued.removeAll()
        let channel = context.channel
        bytesWritten += buffer?.readableBytes ?? 0
        context.writeAndFlush(wrapOutboundOut(buffer ?? ByteBuffer())).whenComplete { _ in channel.close(promise: nil) }
        // A client that never reads would keep the flush, and so the connection, for ever; one
        // that reads slowly gets it all.
        closeUnlessTaking(channel, after: limits.idleTimeout ?? .seconds(60))
    }

    private func closeUnlessTaking(_ channel: any Channel, after delay: TimeAmount) {
        channel.eventLoop.assumeIsolated().scheduleTask(in: delay) { [self] in
            guard channel.isActive else { return }
            if let context, tookOutput(context) {
                closeUnlessTaking(channel, after: delay)
            } else {
                channel.close(promise: nil)
            }
        }
    }

    /// Closes now, for a reason worth a log line (bad input, limits).
    func close(because reason: String) {
        guard let context, !closing else { return }
        // The replies to the lines before this one go out first.
        flushIfNeeded(context: context)
        move(to: .closing)
        queued.removeAll()
        logger.info("closing a client: \(reason)", metadata: ["peer": "\(peer)"])
        context.close(promise: nil)
    }

    private func flushIfNeeded(context: ChannelHandlerContext) {
        guard heldUntil == nil, let buffer = gathered else { return }
        gathered = nil
        bytesWritten += buffer.readableBytes
        context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
        _ = checkOutput(context: context)
    }

    /// Drops a client whose unread output passed the cap. Returns whether it is still open.
    private func checkOutput(context: ChannelHandlerContext) -> Bool {
        guard !closing else { return false }
        // A writable channel holds less than the high mark: under a cap at least that large, no
        // need to ask how much (an option read per reply cost more than the rest of the check).
        if limits.maxOutputBytes >= OutputMarks.high && context.channel.isWritable { return true }
        guard let pending = try? context.channel.syncOptions?.getOption(.bufferedWritableBytes),
            pending > limits.maxOutputBytes
        else { return true }
        move(to: .closing)
        queued.removeAll()
        logger.warning(
            "client does not read what it is sent; closing it",
            metadata: [
                "peer": "\(peer)", "unread_bytes": "\(pending)", "limit": "\(limits.maxOutputBytes)",
            ])
        context.close(promise: nil)
        return false
    }

    // MARK: Replies held until their changes are durable

    /// Gathers output until the changes up to `sequence` are durable.
    private func hold(until sequence: Int) {
        servedSince = sequence
        guard let changes, let context, sequence > (heldUntil ?? 0) else { return }
        heldUntil = sequence
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        let eventLoop = context.eventLoop
        changes.whenDurable(sequence) {
            eventLoop.execute { bound.value.durable(through: sequence) }
        }
    }

    private func durable(through sequence: Int) {
        guard let held = heldUntil, sequence >= held, let context else { return }
        heldUntil = nil
        if state == .closingAfterHeld {
            let buffer = gathered
            gathered = nil
            close(context, after: buffer)
            return
        }
        flushIfNeeded(context: context)
        resumePart()
        serveQueued(context: context)
        flushIfNeeded(context: context)
        releaseRead(context: context)
    }

    // MARK: End of input, silence, the end

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .inputClosed = event as? ChannelEvent {
            if case .open(let line) = state { move(to: .inputClosed(line)) }
            closeIfDone(context: context)
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }

    /// After a half-close: closes once nothing is running or queued (the replies are flushed first).
    private func closeIfDone(context: ChannelHandlerContext) {
        guard case .inputClosed(.idle) = state, heldUntil == nil, queued.isEmpty else { return }
        writeAndClose(nil)
    }

    /// One timer per connection, only while it could fall silent: it wakes at the timeout, and
    /// again for what is left of it when the client was heard meanwhile; a client waiting for
    /// news lets it lapse (no wake-ups for it) until it is heard again. A client that took some
    /// of its replies since the last wake-up (a long listing, read slowly) was heard: silence
    /// is neither sending nor taking.
    private func scheduleIdleCheck(context: ChannelHandlerContext) {
        guard let timeout = limits.idleTimeout, idleCheck == nil else { return }
        let at = lastHeard + timeout
        idleCheck = context.eventLoop.assumeIsolated().scheduleTask(deadline: at) { [self] in
            idleCheck = nil
            guard let context = self.context, !closing else { return }
            if busy || heldUntil != nil || session.waitsForNews { return }
            if tookOutput(context) { lastHeard = .now() }
            if NIODeadline.now() >= lastHeard + timeout {
                close(because: "silent for \(timeout.nanoseconds / 1_000_000_000) s")
            } else {
                scheduleIdleCheck(context: context)
            }
        }
    }

    /// Whether the client is taking a reply: false once everything written left the channel;
    /// true while replies wait in the channel and some of them were sent on since the
    /// last call: the client is taking them (the buffer drains only as fast as it reads, once
    /// the socket's is full). Asked once per timeout, not per reply.
    private func tookOutput(_ context: ChannelHandlerContext) -> Bool {
        let pending = (try? context.channel.syncOptions?.getOption(.bufferedWritableBytes)) ?? 0
        let taken = bytesWritten - pending
        defer { bytesTakenAtCheck = taken }
        return pending > 0 && taken > bytesTakenAtCheck
    }

    /// The session leaves a state in which silence was expected (news delivered, a waiting
    /// reply written): the silence counts from now.
    func heard() {
        lastHeard = .now()
        if let context { scheduleIdleCheck(context: context) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        move(to: .closing)
        queued.removeAll()
        resumePart()
        session.connectionEnded()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
