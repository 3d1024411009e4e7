import Logging
import NIOCore
import TonearmFrontEnd
import TonearmMedia
import TonearmProtocol

/// One MPD client's side of the conversation, served in order by its `OrderedRequestHandler`
/// (on the connection's event loop): the greeting, command lists, `idle`/`noidle`, the password,
/// and every command in `MPDCommands`. Idle news comes from `MPDIdleHub`, on the same loop.
final class MPDSession: RequestSession {
    static let greeting = "OK MPD 0.23.5\n"
    /// MPD's `max_command_list_size` default (2048 KiB): a longer list closes the connection.
    static let maxListBytes = 2048 * 1024

    /// One parsed line of a command list, or why it could not be parsed.
    typealias Parsed = Result<MPDRequest, MPDError>

    private let environment: MPDEnvironment
    private let access: AccessPolicy.Level
    private let logger: Logger
    let peer: ClientPeer
    private let eventLoop: any EventLoop
    private let allocator: ByteBufferAllocator

    // Event-loop state.
    /// Set by `start`; the handler owns this session, so the session holds it weakly.
    private weak var connection: (any RequestConnection)?
    private var authorized = false
    private var tags = MPDTags.all
    private var binaryLimit = MPDCall.defaultBinaryLimit
    /// Inside `command_list_begin` (ok: false) or `command_list_ok_begin` (ok: true).
    private var list: (ok: Bool, requests: [Parsed], bytes: Int)?
    /// While idle: the subsystems the client waits for.
    private var idleMask: MPDSubsystems?
    /// What changed since this client last heard, as MPD keeps it per client.
    private var pending: MPDSubsystems = []
    /// Commands refused to this client, each logged once.
    private var refusalsLogged: Set<String> = []

    init(
        environment: MPDEnvironment, access: AccessPolicy.Level, logger: Logger, peer: ClientPeer,
        eventLoop: any EventLoop, allocator: ByteBufferAllocator
    ) {
        self.environment = environment
        self.access = access
        self.logger = logger
        self.peer = peer
        self.eventLoop = eventLoop
        self.allocator = allocator
    }

    /// What this client may do now: nothing but the basics before the password, when one is set.
    private var permission: MPDPermission {
        if environment.password != nil && !authorized { return .none }
        return access == .control ? .control : .read
    }

    var waitsForNews: Bool { idleMask != nil }

    /// Greets the client and starts hearing the player's news.
    func start(_ connection: any RequestConnection) {
        self.connection = connection
        environment.hub.register(self, on: eventLoop)
        var greeting = allocator.buffer(capacity: 16)
        greeting.writeString(Self.greeting)
        connection.write(greeting)
    }

    func connectionEnded() {
        environment.hub.unregister(self)
    }

    func serve(_ line: InboundLine, _ connection: any RequestConnection) -> RequestServed {
        handle(line, connection)
    }

    private func handle(_ line: InboundLine, _ connection: any RequestConnection) -> RequestServed {
        guard case .line(let buffer) = line else {
            // MPD drops a client whose line does not fit its input buffer.
            connection.close(because: "mpd client sent an over-long line")
            return .answered
        }
        // MPD's order (src/client/Process.cxx): a line that cannot be a command closes the
        // connection; noidle is answered before anything else; while idle, nothing else is allowed.
        guard buffer.withUnsafeReadableBytes(MPDRequest.startsLikeCommand) else {
            connection.close(because: "mpd client sent a line that is no command")
            return .answered
        }
        if buffer.readableBytesView.elementsEqual("noidle".utf8) {
            // Not idle: nothing to cancel, and MPD answers nothing.
            if idleMask != nil { finishIdle() }
            return .answered
        }
        if idleMask != nil {
            connection.close(because: "mpd client sent a command while idle")
            return .answered
        }
        let parsed = buffer.withUnsafeReadableBytes { MPDRequest.parse($0) }
        if list != nil {
            if case .success(let request) = parsed, request.name == "command_list_end", let current = list {
                list = nil
                return run(current.requests, ok: current.ok, from: 0, response: MPDResponse(allocator: allocator))
            }
            // Changed in place (no other reference to the array): a copy per line would make a
            // long list quadratic.
            list!.bytes += buffer.readableBytes + 1
            guard list!.bytes <= Self.maxListBytes else {
                list = nil
                connection.close(because: "mpd client's command list is over \(Self.maxListBytes) bytes")
                return .answered
            }
            list!.requests.append(parsed)
            return .answered
        }
        if case .success(let request) = parsed, request.arguments.isEmpty,
            request.name == "command_list_begin" || request.name == "command_list_ok_begin"
        {
            list = (request.name == "command_list_ok_begin", [], 0)
            return .answered
        }
        return run([parsed], ok: nil, from: 0, response: MPDResponse(allocator: allocator))
    }

    /// Runs `batch` (one command, or a command list with `ok` saying which kind) from `start`,
    /// writing into `response`; stops at the first error. A command that waits suspends the run,
    /// which goes on where it stopped once its answer is back (`.waiting`).
    private func run(_ batch: [Parsed], ok: Bool?, from start: Int, response: MPDResponse) -> RequestServed {
        var response = response
        var index = start
        while index < batch.count {
            let listIndex = ok == nil ? 0 : index
            let request: MPDRequest
            switch batch[index] {
            case .failure(let error):
                response.ack(error, index: listIndex, command: "")
                send(response, thenClose: error.closesConnection)
                return .answered
            case .success(let parsed):
                request = parsed
            }
            guard let command = MPDCommands.table[request.name] else {
                response.ack(MPDError(.unknown, "unknown command \"\(request.name)\""), index: listIndex, command: "")
                send(response)
                return .answered
            }
            if let error = command.check(request, permission: permission) {
                logRefusal(command.name, error)
                response.ack(error, index: listIndex, command: command.name)
                send(response)
                return .answered
            }
            if ok != nil, let calls = batchCalls(command, batch, from: index) {
                runBatch(command, calls: calls, batch: batch, ok: ok, index: index, response: response)
                return .waiting
            }
            switch command.body.timing(queueLength: environment.player.queue.items.count, allocator: allocator) {
            case .now(let body):
                do throws(MPDError) {
                    try body(makeCall(request), &response)
                } catch {
                    response.ack(error, index: listIndex, command: command.name)
                    send(response)
                    return .answered
                }
            case .connection(let body):
                let outcome: MPDCommand.ConnectionOutcome
                do throws(MPDError) {
                    outcome = try body(self, request, &response)
                } catch {
                    response.ack(error, index: listIndex, command: command.name)
                    send(response)
                    return .answered
                }
                switch outcome {
                case .done:
                    break
                case .close:
                    send(response, thenClose: true)
                    return .answered
                case .idle:
                    // Answered when something changes (or at once, when something already has).
                    send(response)
                    return .answered
                }
            case .later(let body):
                runLater(
                    body, call: makeCall(request), command: command.name, batch: batch, ok: ok, index: index,
                    response: response)
                return .waiting
            case .stream(let body):
                runStream(
                    body, call: makeCall(request), command: command.name, batch: batch, ok: ok, index: index,
                    response: response)
                return .waiting
            }
            if ok == true { response.listOK() }
            index += 1
        }
        response.ok()
        send(response)
        return .answered
    }

    private func makeCall(_ request: MPDRequest) -> MPDCall {
        MPDCall(
            request: request, environment: environment, permission: permission, tags: tags, peer: peer,
            binaryLimit: binaryLimit)
    }

    /// The calls of a command list from `index` on that run as one batch of `command`: those
    /// in a row that join it and pass its checks. Nil when fewer than two would.
    private func batchCalls(_ command: MPDCommand, _ batch: [Parsed], from index: Int) -> [MPDCall]? {
        guard let joining = command.batch else { return nil }
        var calls: [MPDCall] = []
        for parsed in batch[index...] {
            guard case .success(let request) = parsed, request.name == command.name, joining.joins(request),
                command.check(request, permission: permission) == nil
            else { break }
            calls.append(makeCall(request))
        }
        return calls.count > 1 ? calls : nil
    }

    /// Runs a batch in a task; its answers come back to `finished` on the event loop.
    private func runBatch(
        _ command: MPDCommand, calls: [MPDCall], batch: [Parsed], ok: Bool?, index: Int,
        response: MPDResponse
    ) {
        guard let run = command.batch?.run else { return }
        let eventLoop = self.eventLoop
        let bound = NIOLoopBound((session: self, response: response), eventLoop: eventLoop)
        let name = command.name
        Task {
            let (answers, failure) = await run(calls)
            eventLoop.execute {
                let (session, response) = bound.value
                session.finished(answers, failure, command: name, batch: batch, ok: ok, index: index, response: response)
            }
        }
    }

    /// Runs a command that answers later in a task; its answer comes back to `finished` on the
    /// event loop.
    private func runLater(
        _ body: @escaping MPDCommand.Later, call: MPDCall,
        command: String, batch: [Parsed], ok: Bool?, index: Int, response: MPDResponse
    ) {
        let eventLoop = self.eventLoop
        let bound = NIOLoopBound((session: self, response: response), eventLoop: eventLoop)
        Task {
            let result: Result<ByteBuffer?, MPDError>
            do throws(MPDError) { result = .success(try await body(call)) } catch { result = .failure(error) }
            eventLoop.execute {
                let (session, response) = bound.value
                session.finished(result, command: command, batch: batch, ok: ok, index: index, response: response)
            }
        }
    }

    /// Runs a streamed command in a task: what the batch wrote so far goes out first, then each
    /// part as the client takes the one before; then the run goes on as after `runLater`.
    private func runStream(
        _ body: @escaping MPDCommand.Stream, call: MPDCall,
        command: String, batch: [Parsed], ok: Bool?, index: Int, response: MPDResponse
    ) {
        send(response)
        let eventLoop = self.eventLoop
        let allocator = self.allocator
        let bound = NIOLoopBound(self, eventLoop: eventLoop)
        let sink = MPDReplySink { part in
            await withCheckedContinuation { (ready: CheckedContinuation<Bool, Never>) in
                eventLoop.execute {
                    guard let connection = bound.value.connection else { return ready.resume(returning: false) }
                    connection.writePart(part) { ready.resume(returning: $0) }
                }
            }
        }
        Task {
            let result: Result<ByteBuffer?, MPDError>
            do throws(MPDError) {
                try await body(call, sink)
                result = .success(nil)
            } catch {
                result = .failure(error)
            }
            eventLoop.execute {
                bound.value.finished(
                    result, command: command, batch: batch, ok: ok, index: index,
                    response: MPDResponse(allocator: allocator))
            }
        }
    }

    /// A command that waited has its answer: the run goes on (it may wait again), then the
    /// connection serves the lines behind it.
    private func finished(
        _ result: Result<ByteBuffer?, MPDError>, command: String, batch: [Parsed], ok: Bool?, index: Int,
        response: MPDResponse
    ) {
        switch result {
        case .success(let lines): finished([lines], nil, command: command, batch: batch, ok: ok, index: index, response: response)
        case .failure(let error): finished([], error, command: command, batch: batch, ok: ok, index: index, response: response)
        }
    }

    /// The commands from `index` on that waited have their answers (one per command that
    /// succeeded, then the error that stopped the next one, if any): as for one command.
    private func finished(
        _ answers: [ByteBuffer?], _ failure: MPDError?, command: String, batch: [Parsed], ok: Bool?,
        index: Int, response: MPDResponse
    ) {
        var response = response
        for answer in answers {
            if var lines = answer { response.buffer.writeBuffer(&lines) }
            if ok == true { response.listOK() }
        }
        if let failure {
            response.ack(failure, index: ok == nil ? 0 : index + answers.count, command: command)
            send(response)
        } else if run(batch, ok: ok, from: index + answers.count, response: response) == .waiting {
            return
        }
        connection?.finished()
    }

    /// A command refused for want of permission, logged once per client and command (a flood
    /// of refused commands writes one line each).
    private func logRefusal(_ command: String, _ error: MPDError) {
        guard error.code == .permission, refusalsLogged.count < 64, refusalsLogged.insert(command).inserted else { return }
        RefusalLog.warn(logger, "refused a command", ["protocol": "mpd", "peer": "\(peer)", "command": "\(command)"])
    }

    // MARK: The commands about the connection (`MPDCommands.connectionCommands`)

    /// `commands`, `notcommands`: what this client may (not) run.
    func listCommands(allowed: Bool, into response: inout MPDResponse) {
        for command in MPDCommands.names(allowed: allowed, for: permission) { response.add("command", command) }
    }

    /// `password`.
    func logIn(_ password: String) throws(MPDError) {
        guard let expected = environment.password, password == expected else { throw MPDError(.password, "incorrect password") }
        authorized = true
    }

    /// `binarylimit`: the largest binary piece this client is sent (`albumart`, `readpicture`).
    func setBinaryLimit(_ text: String) throws(MPDError) {
        guard let value = Int(text) else { throw .argument("Integer expected: \(text)") }
        guard value >= MPDCall.binaryLimits.lowerBound else { throw .argument("Value too small") }
        guard value <= MPDCall.binaryLimits.upperBound else { throw .argument("Number too large: \(text)") }
        binaryLimit = value
    }

    /// `idle`: waits for news of the named subsystems (all when none is named).
    func beginIdle(_ names: [String], into response: inout MPDResponse) throws(MPDError) {
        var mask: MPDSubsystems = []
        for name in names {
            guard let flag = MPDSubsystems(name: name) else { throw .argument("Unrecognized idle event: \(name)") }
            mask.insert(flag)
        }
        idleMask = mask.isEmpty ? .all : mask
        deliverIdle(into: &response)
    }

    /// `tagtypes`: lists the tags, or changes which ones this client is shown.
    func tagTypes(_ arguments: [String], response: inout MPDResponse) throws(MPDError) {
        guard let subcommand = arguments.first else {
            for tag in MediaTag.allCases where tags.shows(tag) { response.add("tagtype", tag.name) }
            return
        }
        let names = arguments.dropFirst()
        switch subcommand {
        case "all", "clear":
            guard names.isEmpty else { throw .argument("Too many arguments") }
            tags = subcommand == "all" ? .all : .none
        case "enable", "disable":
            guard !names.isEmpty else { throw .argument("Not enough arguments") }
            var chosen: [MediaTag] = []
            for name in names {
                guard let tag = MediaTag.tag(named: name) else { throw .argument("Unknown tag type") }
                chosen.append(tag)
            }
            if subcommand == "enable" { tags.show(chosen) } else { tags.hide(chosen) }
        default:
            throw .argument("Unknown sub command")
        }
    }

    /// News from the player, on this connection's loop.
    func subsystemsChanged(_ subsystems: MPDSubsystems) {
        pending.formUnion(subsystems)
        guard idleMask != nil, let connection else { return }
        var response = MPDResponse(allocator: allocator)
        deliverIdle(into: &response)
        if idleMask == nil {
            send(response)
            connection.heard()
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
    private func finishIdle() {
        var response = MPDResponse(allocator: allocator)
        response.ok()
        idleMask = nil
        send(response)
    }

    private func send(_ response: MPDResponse, thenClose: Bool = false) {
        guard let connection else { return }
        var response = response
        let bytes = response.buffer
        if thenClose {
            connection.writeAndClose(bytes)
        } else if bytes.readableBytes > 0 {
            connection.write(bytes)
        }
    }
}
