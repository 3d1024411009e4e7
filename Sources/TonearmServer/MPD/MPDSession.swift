import Logging
import NIOCore

/// Serves one MPD client on its event loop: the greeting, command lists, `idle`/`noidle`, the
/// password, and every command in `MPDCommands`. Replies keep the order of requests: while a
/// command that waits (`play`, `lsinfo`, …) runs in a task, later lines queue behind it. Idle news
/// comes from `MPDIdleHub`, always on this connection's loop.
final class MPDConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = InboundLine
    typealias OutboundOut = ByteBuffer

    static let greeting = "OK MPD 0.23.5\n"
    /// MPD's `max_command_list_size` default (2048 KiB): a longer list closes the connection.
    static let maxListBytes = 2048 * 1024

    /// One parsed line of a command list, or why it could not be parsed.
    typealias Parsed = Result<MPDRequest, MPDError>

    private let environment: MPDEnvironment
    private let access: AccessPolicy.Level
    private let logger: Logger

    // Event-loop state.
    private var authorized = false
    private var tags = MPDTags.all
    /// Inside `command_list_begin` (ok: false) or `command_list_ok_begin` (ok: true).
    private var list: (ok: Bool, requests: [Parsed], bytes: Int)?
    /// While idle: the subsystems the client waits for.
    private var idleMask: MPDSubsystems?
    /// What changed since this client last heard, as MPD keeps it per client.
    private var pending: MPDSubsystems = []
    /// A command that waits is running; lines that arrive meanwhile wait in `queued`.
    private var busy = false
    private var queued = CircularBuffer<InboundLine>()
    private var inputClosed = false
    private var context: ChannelHandlerContext?
    /// Inside `channelRead`: replies are written, and flushed once the read is done
    /// (`channelReadComplete`), so a client that sends many commands at once costs one write.
    private var reading = false
    private var unflushed = false

    init(environment: MPDEnvironment, access: AccessPolicy.Level, logger: Logger) {
        self.environment = environment
        self.access = access
        self.logger = logger
    }

    /// What this client may do now: nothing but the basics before the password, when one is set.
    private var permission: MPDPermission {
        if environment.password != nil && !authorized { return .none }
        return access == .control ? .control : .read
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        environment.hub.register(self, on: context.eventLoop)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        environment.hub.unregister(self)
        self.context = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        var greeting = context.channel.allocator.buffer(capacity: 16)
        greeting.writeString(Self.greeting)
        context.writeAndFlush(wrapOutboundOut(greeting), promise: nil)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let line = unwrapInboundIn(data)
        if busy {
            queued.append(line)
        } else {
            reading = true
            handle(line, context: context)
            reading = false
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if unflushed {
            unflushed = false
            context.flush()
        }
        context.fireChannelReadComplete()
    }

    private func handle(_ line: InboundLine, context: ChannelHandlerContext) {
        guard case .line(let buffer) = line else {
            // MPD drops a client whose line does not fit its input buffer.
            logger.info("mpd client sent an over-long line; closing it")
            context.close(promise: nil)
            return
        }
        // MPD's order (src/client/Process.cxx): a line that cannot be a command closes the
        // connection; noidle is answered before anything else; while idle, nothing else is allowed.
        guard buffer.withUnsafeReadableBytes(MPDRequest.startsLikeCommand) else {
            logger.info("mpd client sent a line that is no command; closing it")
            context.close(promise: nil)
            return
        }
        if buffer.readableBytesView.elementsEqual("noidle".utf8) {
            // Not idle: nothing to cancel, and MPD answers nothing.
            if idleMask != nil { finishIdle(context: context) }
            return
        }
        if idleMask != nil {
            logger.info("mpd client sent a command while idle; closing it")
            context.close(promise: nil)
            return
        }
        let parsed = buffer.withUnsafeReadableBytes { MPDRequest.parse($0) }
        if list != nil {
            if case .success(let request) = parsed, request.name == "command_list_end", let current = list {
                list = nil
                run(current.requests, ok: current.ok, from: 0, response: MPDResponse(allocator: context.channel.allocator),
                    context: context)
                return
            }
            // Changed in place (no other reference to the array): a copy per line would make a
            // long list quadratic.
            list!.bytes += buffer.readableBytes + 1
            guard list!.bytes <= Self.maxListBytes else {
                logger.info("mpd client's command list is too long; closing it", metadata: ["limit": "\(Self.maxListBytes)"])
                list = nil
                context.close(promise: nil)
                return
            }
            list!.requests.append(parsed)
            return
        }
        if case .success(let request) = parsed, request.arguments.isEmpty,
           request.name == "command_list_begin" || request.name == "command_list_ok_begin" {
            list = (request.name == "command_list_ok_begin", [], 0)
            return
        }
        run([parsed], ok: nil, from: 0, response: MPDResponse(allocator: context.channel.allocator), context: context)
    }

    /// Runs `batch` (one command, or a command list with `ok` saying which kind) from `start`,
    /// writing into `response`; stops at the first error. A command that waits suspends the run,
    /// which goes on where it stopped once its answer is back.
    private func run(_ batch: [Parsed], ok: Bool?, from start: Int, response: MPDResponse, context: ChannelHandlerContext) {
        var response = response
        var index = start
        while index < batch.count {
            let listIndex = ok == nil ? 0 : index
            let request: MPDRequest
            switch batch[index] {
            case .failure(let error):
                response.ack(error, index: listIndex, command: "")
                send(response, context: context, thenClose: error.closesConnection)
                return
            case .success(let parsed):
                request = parsed
            }
            switch connectionCommand(request, response: &response, listIndex: listIndex) {
            case .done:
                break
            case .failed:
                send(response, context: context)
                return
            case .close:
                send(response, context: context, thenClose: true)
                return
            case .idle:
                // Answered when something changes (or at once, when something already has).
                send(response, context: context)
                return
            case .notMine:
                guard let command = MPDCommands.table[request.name] else {
                    response.ack(MPDError(.unknown, "unknown command \"\(request.name)\""), index: listIndex, command: "")
                    send(response, context: context)
                    return
                }
                if let error = command.check(request, permission: permission) {
                    response.ack(error, index: listIndex, command: command.name)
                    send(response, context: context)
                    return
                }
                let call = MPDCall(request: request, environment: environment, permission: permission, tags: tags)
                switch command.body {
                case .now(let body):
                    do throws(MPDError) {
                        try body(call, &response)
                    } catch {
                        response.ack(error, index: listIndex, command: command.name)
                        send(response, context: context)
                        return
                    }
                case .later(let body):
                    busy = true
                    let index = index
                    let eventLoop = context.eventLoop
                    let bound = NIOLoopBound((handler: self, context: context, response: response), eventLoop: eventLoop)
                    Task {
                        let result: Result<ByteBuffer?, MPDError>
                        do throws(MPDError) { result = .success(try await body(call)) } catch { result = .failure(error) }
                        eventLoop.execute {
                            let (handler, context, response) = bound.value
                            handler.finished(result, command: command.name, batch: batch, ok: ok, index: index,
                                             response: response, context: context)
                        }
                    }
                    return
                }
            }
            if ok == true { response.listOK() }
            index += 1
        }
        response.ok()
        send(response, context: context)
    }

    /// A command that waited has its answer: the run goes on, then the lines that queued meanwhile.
    private func finished(_ result: Result<ByteBuffer?, MPDError>, command: String, batch: [Parsed], ok: Bool?, index: Int,
                          response: MPDResponse, context: ChannelHandlerContext) {
        busy = false
        var response = response
        switch result {
        case .success(let lines):
            if var lines { response.buffer.writeBuffer(&lines) }
            if ok == true { response.listOK() }
            run(batch, ok: ok, from: index + 1, response: response, context: context)
        case .failure(let error):
            response.ack(error, index: ok == nil ? 0 : index, command: command)
            send(response, context: context)
        }
        drainQueue(context: context)
    }

    private func drainQueue(context: ChannelHandlerContext) {
        while !busy, idleMask == nil, let next = queued.popFirst() { handle(next, context: context) }
        closeIfDone(context: context)
    }

    private enum ConnectionOutcome { case done, failed, close, idle, notMine }

    /// The commands about the connection itself; an error is written as MPD's ACK.
    private func connectionCommand(_ request: MPDRequest, response: inout MPDResponse,
                                   listIndex: Int) -> ConnectionOutcome {
        guard let needed = MPDCommands.connectionCommands.first(where: { $0.name == request.name })?.permission else {
            return .notMine
        }
        do throws(MPDError) {
            guard permission >= needed else { throw MPDError(.permission, "you don't have permission for \"\(request.name)\"") }
            return try runConnectionCommand(request, response: &response)
        } catch {
            response.ack(error, index: listIndex, command: request.name)
            return .failed
        }
    }

    private func runConnectionCommand(_ request: MPDRequest, response: inout MPDResponse) throws(MPDError) -> ConnectionOutcome {
        let name = request.name
        switch name {
        case "close":
            return .close
        case "commands", "notcommands":
            guard request.arguments.isEmpty else { throw .argument("wrong number of arguments for \"\(name)\"") }
            for command in MPDCommands.names(allowed: name == "commands", for: permission) { response.add("command", command) }
            return .done
        case "password":
            guard request.arguments.count == 1 else { throw .argument("wrong number of arguments for \"password\"") }
            guard let password = environment.password, request.arguments[0] == password else {
                throw MPDError(.password, "incorrect password")
            }
            authorized = true
            return .done
        case "tagtypes":
            try tagTypes(request.arguments, response: &response)
            return .done
        default: // idle; inside a command list it ends the list there, as in MPD 0.23
            var mask: MPDSubsystems = []
            for argument in request.arguments {
                guard let flag = MPDSubsystems(name: argument) else { throw .argument("Unrecognized idle event: \(argument)") }
                mask.insert(flag)
            }
            idleMask = mask.isEmpty ? .all : mask
            deliverIdle(into: &response)
            return .idle
        }
    }

    /// `tagtypes`: lists the tags, or changes which ones this client is shown.
    private func tagTypes(_ arguments: [String], response: inout MPDResponse) throws(MPDError) {
        guard let subcommand = arguments.first else {
            for name in MPDTags.names where tags.shows(name) { response.add("tagtype", name) }
            return
        }
        let names = arguments.dropFirst()
        switch subcommand {
        case "all", "clear":
            guard names.isEmpty else { throw .argument("Too many arguments") }
            tags.shown = subcommand == "all" ? Set(MPDTags.names) : []
        case "enable", "disable":
            guard !names.isEmpty else { throw .argument("Not enough arguments") }
            var chosen: [String] = []
            for name in names {
                if let tag = MPDTags.canonical(name) {
                    chosen.append(tag)
                } else if !MPDTags.mpdNames.contains(where: { $0.caseInsensitiveCompare(name) == .orderedSame }) {
                    throw .argument("Unknown tag type")
                }
                // A tag MPD knows and Tonearm does not read is shown to nobody: nothing changes.
            }
            if subcommand == "enable" { tags.shown.formUnion(chosen) } else { tags.shown.subtract(chosen) }
        default:
            throw .argument("Unknown sub command")
        }
    }

    /// News from the player, on this connection's loop.
    func subsystemsChanged(_ subsystems: MPDSubsystems) {
        pending.formUnion(subsystems)
        guard idleMask != nil, let context else { return }
        var response = MPDResponse(allocator: context.channel.allocator)
        deliverIdle(into: &response)
        if idleMask == nil {
            send(response, context: context)
            drainQueue(context: context)
        }
    }

    /// While idle: when something the client waits for has changed, writes `changed:` lines and
    /// OK, and leaves idle.
    private func deliverIdle(into response: inout MPDResponse) {
        guard let mask = idleMask else { return }
        let news = pending.intersection(mask)
        guard !news.isEmpty else { return }
        for name in news.names { response.add("changed", name) }
        response.ok()
        // As MPD does, a notification clears every pending change, asked for or not.
        pending = []
        idleMask = nil
    }

    /// `noidle`: leaves idle with an empty answer (had anything changed, idle would have ended).
    private func finishIdle(context: ChannelHandlerContext) {
        var response = MPDResponse(allocator: context.channel.allocator)
        response.ok()
        idleMask = nil
        send(response, context: context)
        drainQueue(context: context)
    }

    private func send(_ response: MPDResponse, context: ChannelHandlerContext, thenClose: Bool = false) {
        guard response.buffer.readableBytes > 0 || thenClose else { return }
        let channel = context.channel
        if thenClose {
            unflushed = false
            context.writeAndFlush(wrapOutboundOut(response.buffer)).whenComplete { _ in channel.close(promise: nil) }
        } else if reading {
            context.write(wrapOutboundOut(response.buffer), promise: nil)
            unflushed = true
        } else {
            context.writeAndFlush(wrapOutboundOut(response.buffer), promise: nil)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .inputClosed = event as? ChannelEvent {
            inputClosed = true
            closeIfDone(context: context)
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }

    /// After a half-close: close once nothing is running or queued (the replies are flushed first).
    private func closeIfDone(context: ChannelHandlerContext) {
        guard inputClosed, !busy, queued.isEmpty else { return }
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(ByteBuffer())).whenComplete { _ in channel.close(promise: nil) }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
