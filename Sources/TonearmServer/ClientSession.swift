import Foundation
import Logging
import NIOCore
import Synchronization
import TonearmCore
import TonearmPlayer

/// One connected client: its subscriptions and the bounded queue of notifications waiting to be
/// written to it. Notifications pass through `outbox`, which holds at most `backlogLimit`; a
/// client that reads too slowly to keep under it is disconnected, so it never holds memory
/// without end or slows anyone else.
final class ClientSession: Sendable {
    enum EventKind: String, Sendable, Hashable {
        case transition, performance, position
    }

    static let backlogLimit = 4096

    let outbox: AsyncStream<JSONValue>
    private let outboxInput: AsyncStream<JSONValue>.Continuation
    private let player: Player
    private let logger: Logger
    private let channel: any Channel
    private let tasks = Mutex<[Task<Void, Never>]>([])

    init(player: Player, channel: any Channel, logger: Logger) {
        (outbox, outboxInput) = AsyncStream<JSONValue>.makeStream(bufferingPolicy: .bufferingOldest(Self.backlogLimit))
        self.player = player
        self.channel = channel
        self.logger = logger
    }

    /// Replaces any earlier subscription of this client.
    func subscribe(to kinds: Set<EventKind>, positionInterval: Double) {
        var started: [Task<Void, Never>] = []
        if kinds.contains(.transition) {
            let stream = player.transitions()
            started.append(Task { [weak self] in
                for await transition in stream { self?.notify(ProtocolEncoding.transition(transition)) }
            })
        }
        if kinds.contains(.performance) {
            let stream = player.performanceEvents()
            started.append(Task { [weak self] in
                for await event in stream { self?.notify(ProtocolEncoding.performance(event)) }
            })
        }
        if kinds.contains(.position) {
            let player = self.player
            started.append(Task { [weak self] in
                // Ticks only while playing; otherwise it waits for playing without waking.
                while !Task.isCancelled {
                    if player.state != .playing {
                        _ = await player.machine.firstState { $0 == .playing || Task.isCancelled }
                        continue
                    }
                    try? await Task.sleep(for: .seconds(positionInterval))
                    guard !Task.isCancelled, player.state == .playing else { continue }
                    let status = player.status
                    self?.notify(["type": "position", "position": .number(status.position), "duration": JSONValue(status.duration)])
                }
            })
        }
        let previous = tasks.withLock { tasks in
            defer { tasks = started }
            return tasks
        }
        previous.forEach { $0.cancel() }
    }

    private func notify(_ params: JSONValue) {
        let result = outboxInput.yield(RPC.notification(method: "event", params: params))
        if case .dropped = result {
            logger.warning("client is not reading its events; disconnecting it", metadata: ["backlog": "\(Self.backlogLimit)"])
            close()
        }
    }

    func close() {
        tasks.withLock { tasks in
            tasks.forEach { $0.cancel() }
            tasks = []
        }
        outboxInput.finish()
        channel.close(promise: nil)
    }
}
