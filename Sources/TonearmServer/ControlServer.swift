import Foundation
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import TonearmPlayer
import TonearmSync

/// The control socket: JSON-RPC 2.0, one object per line, on a Unix domain socket. Each client
/// is served on the event loop by an `RPCConnectionHandler`; requests on one connection are
/// answered in order, and its event notifications are written between answers. A `Service`: on
/// graceful shutdown it stops accepting, closes every connection, stops playback and removes its
/// socket file.
public final class ControlServer: Service, Sendable {
    public let socketPath: String
    public let maxLineLength: Int
    public let maxClients: Int
    private let player: Player
    private let logger: Logger
    /// A listening socket systemd passed (socket activation): served instead of binding
    /// `socketPath`, and never unlinked (the daemon did not create it).
    private let inherited: CInt?
    private let ready: (@Sendable () -> Void)?
    private let stopping: (@Sendable () -> Void)?
    private let watchdog: Watchdog?
    private let security: ControlSecurity

    /// - Parameters:
    ///   - ready: called once the socket accepts connections.
    ///   - stopping: called when a graceful shutdown begins.
    ///   - watchdog: pinged from the event loop while the daemon is healthy.
    public init(socketPath: String, player: Player, logger: Logger, maxLineLength: Int = 64 * 1024,
                maxClients: Int = 256, inherited: CInt? = nil, ready: (@Sendable () -> Void)? = nil,
                stopping: (@Sendable () -> Void)? = nil, watchdog: Watchdog? = nil,
                security: ControlSecurity = ControlSecurity()) {
        self.security = security
        self.socketPath = socketPath
        self.maxClients = maxClients
        self.player = player
        self.logger = logger
        self.maxLineLength = maxLineLength
        self.inherited = inherited
        self.ready = ready
        self.stopping = stopping
        self.watchdog = watchdog
    }

    public func run() async throws {
        if inherited == nil { try Self.prepareDirectory(for: socketPath) }
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
        let router = RequestRouter(player: player, roots: security.roots)
        let policy = security.policy
        let player = self.player
        let logger = self.logger
        let connections = OpenConnections()
        if inherited == nil, case .live(let pid) = SocketProbe.probe(socketPath) {
            let who = pid.map { "tonearmd (pid \($0))" } ?? "another process"
            throw ServerError("cannot listen on \(socketPath): \(who) is already serving it; stop it first or choose another --socket")
        }
        let server: any Channel
        do {
            let maxClients = self.maxClients
            let bootstrap = ServerBootstrap(group: group)
                .serverChannelOption(.backlog, value: 256)
                // Out of file descriptors, accept fails at once and would be retried at once, for
                // ever: accepting pauses for a moment instead of spinning a core.
                .serverChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(AcceptPauseHandler(logger: logger))
                    }
                }
                .childChannelOption(.allowRemoteHalfClosure, value: true)
                // Past 1 MiB of unsent output a client counts as not reading (see ClientSession).
                .childChannelOption(.writeBufferWaterMark, value: .init(low: 256 * 1024, high: 1024 * 1024))
                .childChannelInitializer { channel in
                    guard connections.add(channel, limit: maxClients) else {
                        logger.warning("too many clients; refusing one", metadata: ["max_clients": "\(maxClients)"])
                        return channel.eventLoop.makeCompletedFuture {
                            try channel.pipeline.syncOperations.addHandler(RefuseConnectionHandler(failure: RPC.Failure(
                                .tooManyClients, "too many clients: at most \(maxClients) may be connected (control.max_clients)")))
                        }
                    }
                    @Sendable func serve(_ access: AccessPolicy.Level) -> EventLoopFuture<Void> {
                        channel.eventLoop.makeCompletedFuture {
                            let session = ClientSession(player: player, channel: channel, logger: logger, access: access)
                            try channel.pipeline.syncOperations.addHandlers(
                                ByteToMessageHandler(LineDecoder(maxLength: maxLineLength)),
                                RPCConnectionHandler(router: router, session: session, maxLineLength: maxLineLength))
                        }
                    }
                    guard !policy.isOpen else { return serve(.control) }
                    return PeerCredentials.of(channel).flatMap { peer in
                        let access = peer.map { policy.level(uid: $0.uid, groups: $0.groups, daemonUID: getuid()) } ?? .none
                        guard access == .none else { return serve(access) }
                        logger.warning("refusing a client the access lists do not name", metadata: [
                            "uid": "\(peer.map { String($0.uid) } ?? "?")", "pid": "\(peer.map { String($0.pid) } ?? "?")"])
                        return channel.eventLoop.makeCompletedFuture {
                            try channel.pipeline.syncOperations.addHandler(RefuseConnectionHandler(failure: RPC.Failure(
                                .permissionDenied, "permission denied: uid \(peer.map { String($0.uid) } ?? "?") may not use "
                                + "this daemon (control.allow_uids, allow_gids, read_gids)")))
                        }
                    }
                }
            if let inherited {
                server = try await bootstrap.withBoundSocket(inherited).get()
            } else {
                // Bound under a private name, given its mode and group, then renamed into place:
                // no client can reach it before its permissions are the configured ones.
                let staging = Self.stagingPath(for: socketPath)
                server = try await bootstrap.bind(unixDomainSocketPath: staging, cleanupExistingSocketFile: true).get()
                do {
                    try applyPermissions(staging)
                    if staging != socketPath, rename(staging, socketPath) != 0 {
                        throw ServerError("cannot move \(staging) to \(socketPath): \(String(cString: strerror(errno)))")
                    }
                } catch {
                    try? await server.close()
                    unlink(staging)
                    throw error
                }
            }
        } catch {
            throw ServerError(SocketProbe.describe(error, path: socketPath))
        }
        // Only a socket file this daemon made is removed at the end.
        let ours = inherited == nil ? SocketProbe.identity(socketPath) : nil
        logger.info("listening", metadata: ["socket": "\(socketPath)",
                                             "from": "\(inherited == nil ? "bound here" : "systemd (socket activation)")"])
        let pings = watchdog?.start(on: server.eventLoop)
        ready?()

        // Serve until asked to stop (SIGTERM/SIGINT through the ServiceGroup), or the listener fails.
        await withTaskGroup(of: Void.self) { waiters in
            waiters.addTask { try? await gracefulShutdown() }
            waiters.addTask { try? await server.closeFuture.get() }
            await waiters.next()
            // Waiting on closeFuture cannot be cancelled: closing the listener ends that waiter.
            waiters.cancelAll()
            server.close(promise: nil)
        }
        logger.info("shutting down")
        stopping?()
        pings?.cancel()
        await connections.closeAll()
        await player.shutdown()
        // Only the socket file this daemon made: never one that replaced it since.
        if let ours, let now = SocketProbe.identity(socketPath), ours == now {
            try? FileManager.default.removeItem(atPath: socketPath)
        }
    }

    /// The socket's mode and group (`control.socket_mode`, `socket_group`), set right after bind.
    private func applyPermissions(_ path: String) throws {
        guard chmod(path, mode_t(security.socketMode)) == 0 else {
            throw ServerError("cannot set the mode of \(path): \(String(cString: strerror(errno)))")
        }
        if let group = security.socketGroup, chown(path, uid_t.max, gid_t(group)) != 0 {
            throw ServerError("cannot give \(path) to group \(group): \(String(cString: strerror(errno)))")
        }
    }

    /// A private name beside `path` to bind under first; `path` itself when that would not fit
    /// a socket address (108 bytes).
    static func stagingPath(for path: String) -> String {
        let directory = (path as NSString).deletingLastPathComponent
        let staging = (directory.isEmpty ? "" : directory + "/") + ".tonearmd-\(getpid()).sock"
        return staging.utf8.count < 108 ? staging : path
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

/// The open client connections, so that shutdown can close them all.
private final class OpenConnections: Sendable {
    private let channels = Locked<[ObjectIdentifier: any Channel]>([:])

    /// Records a new connection; false (and not recorded) when `limit` are already open.
    func add(_ channel: any Channel, limit: Int) -> Bool {
        let id = ObjectIdentifier(channel)
        let admitted = channels.withLock { channels in
            guard channels.count < limit else { return false }
            channels[id] = channel
            return true
        }
        guard admitted else { return false }
        channel.closeFuture.whenComplete { [weak self] _ in self?.channels.withLock { _ = $0.removeValue(forKey: id) } }
        return true
    }

    func closeAll() async {
        for channel in channels.withLock({ Array($0.values) }) { try? await channel.close() }
    }
}

/// Answers a refused connection (beyond `control.max_clients`, or not allowed) with one error
/// line, then closes it.
private final class RefuseConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    private let failure: RPC.Failure

    init(failure: RPC.Failure) { self.failure = failure }

    func channelActive(context: ChannelHandlerContext) {
        let refusal = RPC.response(id: .null, error: failure)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(RPCFraming.line(refusal))).whenComplete { _ in channel.close(promise: nil) }
    }
}
