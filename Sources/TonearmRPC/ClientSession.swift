import Foundation
import Logging
import NIOCore
import Synchronization
import TonearmCore
import TonearmFrontEnd
import TonearmLibrary
import TonearmPlayer
import TonearmProtocol
import TonearmSync

/// One connected client's subscriptions. Notifications go out through the connection's request
/// path (`RequestConnection.writeNews`, on its event loop, after any answer already written):
/// a client that stops reading them is closed past `max_output_buffer_size` of unread output,
/// as one that stops reading its replies, so it never holds memory without end or slows anyone
/// else.
final class ClientSession: Sendable {
    enum EventKind: String, Sendable, Hashable {
        case transition, performance, position, queue, item, library
    }

    private let player: Player
    private let library: Library?
    private let logger: Logger
    /// Hands a notification to the connection (set once the request path starts).
    private let outbox = Locked<(@Sendable (ByteBuffer) -> Void)?>(nil)
    private let tasks = Locked<[Task<Void, Never>]>([])
    private let refusalsLogged = Locked<Set<String>>([])
    /// The current subscription's number (0: none yet).
    private let subscription = Locked<Int>(0)

    /// What this client may do (`AccessPolicy`), fixed at connection.
    let access: AccessPolicy.Level
    /// Who the client is: for the log, and for the files it names.
    let peer: ClientPeer

    init(
        player: Player, library: Library? = nil, logger: Logger, access: AccessPolicy.Level = .control,
        peer: ClientPeer = ClientPeer(credentials: nil, description: "")
    ) {
        self.player = player
        self.library = library
        self.access = access
        self.peer = peer
        self.logger = logger
    }

    /// Replaces any earlier subscription of this client.
    func subscribe(to kinds: Set<EventKind>, positionInterval: Double) {
        // One subscription per connection: the one before is cancelled, and anything its tasks
        // still hold is dropped (its generation is no longer current), so events never repeat
        // or go back.
        let generation = subscription.withLock { current in
            current += 1
            return current
        }
        var started: [Task<Void, Never>] = []
        if kinds.contains(.transition) {
            let stream = player.transitions()
            started.append(
                Task { [weak self] in
                    for await transition in stream { self?.notify(ProtocolEncoding.transition(transition), generation) }
                })
        }
        if kinds.contains(.performance) {
            let stream = player.performanceEvents()
            started.append(
                Task { [weak self] in
                    for await event in stream { self?.notify(ProtocolEncoding.performance(event), generation) }
                })
        }
        if kinds.contains(.queue) || kinds.contains(.item) {
            let stream = player.queueEventStream()
            let wantsQueue = kinds.contains(.queue)
            let wantsItems = kinds.contains(.item)
            started.append(
                Task { [weak self] in
                    for await event in stream {
                        if case .queue = event { if !wantsQueue { continue } } else if !wantsItems { continue }
                        self?.notify(ProtocolEncoding.queueEvent(event), generation)
                    }
                })
        }
        if kinds.contains(.library), let stream = library?.subscribe() {
            started.append(
                Task { [weak self] in
                    for await news in stream {
                        self?.notify(ProtocolEncoding.library(news), generation)
                        // Then, when the scan changed the database: what a library view reloads on.
                        if case .updateFinished(_, let outcome) = news, outcome.changedAnything {
                            self?.notify(["type": "library", "event": "changed"], generation)
                        }
                    }
                })
        }
        if kinds.contains(.position) {
            let player = self.player
            started.append(
                Task { [weak self] in
                    // Ticks only while playing; otherwise it waits for playing without waking.
                    while !Task.isCancelled {
                        if player.state != .playing {
                            _ = await player.machine.firstState { $0 == .playing }
                            continue
                        }
                        try? await Task.sleep(for: .seconds(positionInterval))
                        guard !Task.isCancelled, player.state == .playing else { continue }
                        let status = player.status
                        self?.notify(
                            ["type": "position", "position": .number(status.position), "duration": JSONValue(status.duration)],
                            generation)
                    }
                })
        }
        let previous = tasks.withLock { tasks in
            defer { tasks = started }
            return tasks
        }
        previous.forEach { $0.cancel() }
    }

    /// Where notifications go: the connection's request path (nil once it has ended).
    func attach(_ send: (@Sendable (ByteBuffer) -> Void)?) {
        outbox.withLock { $0 = send }
    }

    private func notify(_ params: JSONValue, _ generation: Int) {
        // Checked and handed on under the lock: an event of a subscription replaced meanwhile
        // is not written after the new one's, and events keep their order.
        subscription.withLock { current in
            guard current == generation, let send = outbox.withLock({ $0 }) else { return }
            send(RPCFraming.line(RPC.notification(method: "event", params: params)))
        }
    }

    /// A method refused to this read-only client, logged once per client and method (a flood
    /// of refused requests writes one line each, at most 64).
    func logRefusal(method: String) {
        let first = refusalsLogged.withLock { $0.count < 64 && $0.insert(method).inserted }
        guard first else { return }
        RefusalLog.warn(logger, "refused a command", ["protocol": "json-rpc", "peer": "\(peer)", "method": "\(method)"])
    }

    /// The client has subscribed to events: it waits for news, and its silence is expected.
    var isSubscribed: Bool { tasks.withLock { !$0.isEmpty } }

    /// Ends the subscriptions (the connection is closing or closed).
    /// Cancels outside the lock: cancelling runs the streams' termination handlers, which take
    /// their own locks, and no lock of ours should be held into code we do not own.
    func endSubscriptions() {
        subscription.withLock { $0 += 1 }
        let ended = tasks.withLock { tasks in
            defer { tasks = [] }
            return tasks
        }
        ended.forEach { $0.cancel() }
    }
}
