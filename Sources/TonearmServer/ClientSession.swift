import Foundation
import Logging
import NIOCore
import Synchronization
import TonearmCore
import TonearmPlayer
import TonearmSync

/// One connected client's subscriptions. Notifications go straight to the channel (NIO queues
/// them on its event loop, after any answer already written). A client that stops reading lets
/// its channel become unwritable; past `backlogLimit` notifications sent while unwritable it is
/// disconnected with a log line, so it never holds memory without end or slows anyone else.
final class ClientSession: Sendable {
    enum EventKind: String, Sendable, Hashable {
        case transition, performance, position, queue, item
    }

    static let backlogLimit = 4096

    private let player: Player
    private let logger: Logger
    private let channel: any Channel
    private let tasks = Locked<[Task<Void, Never>]>([])
    private let sentWhileUnwritable = Atomic<Int>(0)

    /// What this client may do (`AccessPolicy`), fixed at connection.
    let access: AccessPolicy.Level

    init(player: Player, channel: any Channel, logger: Logger, access: AccessPolicy.Level = .control) {
        self.player = player
        self.access = access
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
        if kinds.contains(.queue) || kinds.contains(.item) {
            let stream = player.queueEventStream()
            let wantsQueue = kinds.contains(.queue), wantsItems = kinds.contains(.item)
            started.append(Task { [weak self] in
                for await event in stream {
                    if case .queue = event { if !wantsQueue { continue } } else if !wantsItems { continue }
                    self?.notify(ProtocolEncoding.queueEvent(event))
                }
            })
        }
        if kinds.contains(.position) {
            let player = self.player
            started.append(Task { [weak self] in
                // Ticks only while playing; otherwise it waits for playing without waking.
                while !Task.isCancelled {
                    if player.state != .playing {
                        _ = await player.machine.firstState { $0 == .playing }
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
        if channel.isWritable {
            sentWhileUnwritable.store(0, ordering: .relaxed)
        } else if sentWhileUnwritable.add(1, ordering: .relaxed).newValue > Self.backlogLimit {
            logger.warning("client is not reading its events; disconnecting it", metadata: ["backlog": "\(Self.backlogLimit)"])
            close()
            return
        }
        channel.writeAndFlush(RPCFraming.line(RPC.notification(method: "event", params: params)), promise: nil)
    }

    /// Ends the subscriptions (the connection is closing or closed).
    /// Cancels outside the lock: cancelling runs the streams' termination handlers, which take
    /// their own locks, and no lock of ours should be held into code we do not own.
    func endSubscriptions() {
        let ended = tasks.withLock { tasks in
            defer { tasks = [] }
            return tasks
        }
        ended.forEach { $0.cancel() }
    }

    func close() {
        endSubscriptions()
        channel.close(promise: nil)
    }
}

enum RPCFraming {
    /// A message as one line on the wire.
    static func line(_ message: JSONValue) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.reserveCapacity(512)
        JSONCoding.serialize(message, into: &buffer)
        buffer.writeInteger(UInt8(ascii: "\n"))
        return buffer
    }

    /// A success response as one line: the bytes of `line(RPC.response(id:result:))` (its keys
    /// in sorted order: id, jsonrpc, result), without building the envelope's dictionary.
    static func resultLine(id: JSONValue, result: JSONValue) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.reserveCapacity(512)
        buffer.writeStaticString(#"{"id":"#)
        JSONCoding.serialize(id, into: &buffer)
        buffer.writeStaticString(#","jsonrpc":"2.0","result":"#)
        JSONCoding.serialize(result, into: &buffer)
        buffer.writeStaticString("}\n")
        return buffer
    }
}
