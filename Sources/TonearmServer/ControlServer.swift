import Foundation
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import TonearmPlayer

/// The control socket: JSON-RPC 2.0, one object per line, on a Unix domain socket. Each client
/// is served by its own task; requests on one connection are answered in order, and its event
/// notifications are interleaved between answers. A `Service`: on graceful shutdown it stops
/// accepting, closes every connection, stops playback and removes its socket file.
public final class ControlServer: Service, Sendable {
    public let socketPath: String
    public let maxLineLength: Int
    private let player: Player
    private let logger: Logger
    private let ready: (@Sendable () -> Void)?

    /// - Parameter ready: called once the socket accepts connections.
    public init(socketPath: String, player: Player, logger: Logger, maxLineLength: Int = 64 * 1024,
                ready: (@Sendable () -> Void)? = nil) {
        self.socketPath = socketPath
        self.player = player
        self.logger = logger
        self.maxLineLength = maxLineLength
        self.ready = ready
    }

    public func run() async throws {
        try Self.prepareDirectory(for: socketPath)
        // One event-loop thread is plenty for a control socket and keeps the daemon small.
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        do {
            try await serve(on: group)
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
        try? await group.shutdownGracefully()
    }

    private func serve(on group: MultiThreadedEventLoopGroup) async throws {
        let maxLineLength = self.maxLineLength
        let server: NIOAsyncChannel<NIOAsyncChannel<InboundLine, ByteBuffer>, Never>
        do {
            server = try await ServerBootstrap(group: group)
                .serverChannelOption(.backlog, value: 256)
                .childChannelOption(.allowRemoteHalfClosure, value: true)
                .bind(unixDomainSocketPath: socketPath, cleanupExistingSocketFile: true) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(LineDecoder(maxLength: maxLineLength)))
                        return try NIOAsyncChannel<InboundLine, ByteBuffer>(
                            wrappingChannelSynchronously: channel,
                            configuration: .init(isOutboundHalfClosureEnabled: true))
                    }
                }
        } catch {
            throw ServerError("cannot listen on \(socketPath): \(error)")
        }
        logger.info("listening", metadata: ["socket": "\(socketPath)"])
        ready?()

        await cancelWhenGracefulShutdown {
            try? await server.executeThenClose { connections in
                try await withThrowingDiscardingTaskGroup { tasks in
                    for try await connection in connections {
                        tasks.addTask { await self.serve(connection) }
                    }
                }
            }
        }
        logger.info("shutting down")
        await player.shutdown()
        try? FileManager.default.removeItem(atPath: socketPath)
    }

    private func serve(_ connection: NIOAsyncChannel<InboundLine, ByteBuffer>) async {
        let session = ClientSession(player: player, channel: connection.channel, logger: logger)
        let router = RequestRouter(player: player)
        let maxLineLength = self.maxLineLength
        do {
            try await connection.executeThenClose { inbound, outbound in
                try await withThrowingTaskGroup(of: Void.self) { tasks in
                    // Notifications, written as they come, between answers.
                    tasks.addTask {
                        for await notification in session.outbox {
                            try await outbound.write(Self.encode(notification))
                        }
                    }
                    for try await item in inbound {
                        let reply: JSONValue?
                        switch item {
                        case .tooLong(let limit):
                            reply = RPC.response(id: .null, error: RPC.Failure(
                                .invalidRequest, "invalid request: line longer than \(limit) bytes (limit \(maxLineLength))"))
                        case .line(let buffer):
                            reply = await Self.answer(Data(buffer.readableBytesView), router: router, session: session)
                        }
                        if let reply { try await outbound.write(Self.encode(reply)) }
                    }
                    // The client finished sending (it may still read): answers are out; end events.
                    session.close()
                    tasks.cancelAll()
                }
            }
        } catch {
            logger.debug("connection ended", metadata: ["error": "\(error)"])
        }
        session.close()
    }

    private static func answer(_ line: Data, router: RequestRouter, session: ClientSession) async -> JSONValue? {
        switch RPC.parseRequest(line) {
        case .failure(let bad):
            return RPC.response(id: bad.id, error: bad.failure)
        case .success(let request):
            let result = await router.handle(request, session: session)
            guard let id = request.id else { return nil }
            switch result {
            case .success(let value): return RPC.response(id: id, result: value)
            case .failure(let failure): return RPC.response(id: id, error: failure)
            }
        }
    }

    private static func encode(_ value: JSONValue) -> ByteBuffer {
        var data = value.serialized()
        data.append(UInt8(ascii: "\n"))
        return ByteBuffer(bytes: data)
    }

    /// Creates the socket's directory (0755) when missing; systemd's RuntimeDirectory does it for the service.
    static func prepareDirectory(for path: String) throws {
        let directory = (path as NSString).deletingLastPathComponent
        guard !directory.isEmpty else { return }
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o755])
        } catch {
            throw ServerError("cannot create socket directory \(directory): \(error.localizedDescription)")
        }
    }
}

public struct ServerError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
