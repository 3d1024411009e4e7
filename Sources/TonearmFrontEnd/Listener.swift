import Foundation
import Logging
import NIOCore
import NIOPosix
import TonearmProtocol
import TonearmSync

/// Where a front-end listens.
package enum ListenAddress: Sendable, CustomStringConvertible {
    /// A Unix socket the daemon binds (and removes at the end), or one systemd passed (`inherited`).
    case unix(path: String, inherited: CInt?)
    case tcp(host: String, port: Int)

    package var description: String {
        switch self {
        case .unix(let path, _): path
        case .tcp(let host, let port): host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        }
    }
}

/// One protocol's listening socket: how a connection is served, and how the protocol says no.
/// The JSON-RPC control socket and MPD's sockets are each one of these, on the same event loop,
/// sharing the accept-pause guard, the connection limit and the peer-credential check.
package struct FrontEnd: Sendable {
    package enum Refusal: Sendable {
        case tooManyClients(limit: Int)
        /// A TCP front-end's cap on connections from one address (`maxClientsPerAddress`).
        case tooManyFromOneAddress(limit: Int)
        case notAllowed(uid: UInt32?)
    }

    package let name: String
    package let address: ListenAddress
    package let maxClients: Int
    /// Over TCP, at most this many connections from one address (nil: no cap of its own), so
    /// that one machine cannot take every place.
    package let maxClientsPerAddress: Int?
    package let socketMode: UInt16
    package let socketGroup: UInt32?
    /// Peer credentials decide access on Unix sockets; TCP peers have none and get `tcpAccess`.
    package let policy: AccessPolicy
    package let tcpAccess: AccessPolicy.Level
    /// The bytes sent to a refused client before it is closed.
    package let refusal: @Sendable (Refusal) -> ByteBuffer
    /// Serves an accepted connection with the access it has; the last argument names the peer
    /// for the log ("uid=… pid=…", or the TCP address).
    package let serve: @Sendable (any Channel, AccessPolicy.Level, ClientPeer) -> EventLoopFuture<Void>

    package init(
        name: String, address: ListenAddress, maxClients: Int, socketMode: UInt16, socketGroup: UInt32?,
        policy: AccessPolicy, tcpAccess: AccessPolicy.Level, refusal: @escaping @Sendable (Refusal) -> ByteBuffer,
        maxClientsPerAddress: Int? = nil,
        serve: @escaping @Sendable (any Channel, AccessPolicy.Level, ClientPeer) -> EventLoopFuture<Void>
    ) {
        self.name = name
        self.address = address
        self.maxClients = maxClients
        self.maxClientsPerAddress = maxClientsPerAddress
        self.socketMode = socketMode
        self.socketGroup = socketGroup
        self.policy = policy
        self.tcpAccess = tcpAccess
        self.refusal = refusal
        self.serve = serve
    }
}

/// A bound front-end: its listening channel and its open connections.
package final class Listener: Sendable {
    package let frontEnd: FrontEnd
    package let channel: any Channel
    let connections: OpenConnections
    /// The socket file this daemon made, so that shutdown removes only that one.
    private let ownedFile: (path: String, device: UInt64, inode: UInt64)?

    private init(frontEnd: FrontEnd, channel: any Channel, connections: OpenConnections) {
        self.frontEnd = frontEnd
        self.channel = channel
        self.connections = connections
        if case .unix(let path, nil) = frontEnd.address, let identity = SocketProbe.identity(path) {
            ownedFile = (path, identity.device, identity.inode)
        } else {
            ownedFile = nil
        }
    }

    /// Binds `frontEnd` on `group`; throws a `ServerError` in words.
    package static func bind(_ frontEnd: FrontEnd, group: any EventLoopGroup, logger: Logger) async throws -> Listener {
        if case .unix(let path, nil) = frontEnd.address {
            try prepareDirectory(for: path)
            if case .live(let pid) = SocketProbe.probe(path) {
                let who = pid.map { "tonearmd (pid \($0))" } ?? "another process"
                throw ServerError("cannot listen on \(path): \(who) is already serving it; stop it first or choose another path")
            }
        }
        let connections = OpenConnections()
        let bootstrap = makeBootstrap(frontEnd, group: group, connections: connections, logger: logger)
        let channel: any Channel
        do {
            switch frontEnd.address {
            case .unix(_, let inherited?):
                channel = try await bootstrap.withBoundSocket(inherited).get()
            case .unix(let path, nil):
                channel = try await bindUnix(bootstrap, path: path, frontEnd: frontEnd)
            case .tcp(let host, let port):
                channel = try await bootstrap.serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
                    .bind(host: host, port: port).get()
            }
        } catch let error as ServerError {
            throw error
        } catch {
            throw ServerError(SocketProbe.describe(error, path: frontEnd.address.description))
        }
        return Listener(frontEnd: frontEnd, channel: channel, connections: connections)
    }

    private static func makeBootstrap(
        _ frontEnd: FrontEnd, group: any EventLoopGroup, connections: OpenConnections,
        logger: Logger
    ) -> ServerBootstrap {
        let isTCP = if case .tcp = frontEnd.address { true } else { false }
        return ServerBootstrap(group: group)
            // Room for a crowd arriving at once (a page's many requests, a client's reconnects):
            // past a full accept queue the kernel drops the handshake's last ACK, and such a
            // client waits out SYN-ACK retransmits (1, 2, 4 s …) before it is even accepted.
            .serverChannelOption(.backlog, value: 1024)
            // Out of file descriptors, accept fails at once and would be retried at once, for
            // ever: accepting pauses for a moment instead of spinning a core.
            .serverChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(AcceptPauseHandler(logger: logger))
                }
            }
            .childChannelOption(.allowRemoteHalfClosure, value: true)
            // Past the high mark of unsent output a client counts as not reading (see OrderedRequestHandler).
            .childChannelOption(.writeBufferWaterMark, value: .init(low: OutputMarks.low, high: OutputMarks.high))
            .childChannelInitializer { channel in
                let address = isTCP ? channel.remoteAddress?.ipAddress : nil
                switch connections.add(channel, limit: frontEnd.maxClients, address: address, perAddress: frontEnd.maxClientsPerAddress) {
                case .admitted:
                    break
                case .tooMany:
                    logger.warning(
                        "too many clients; refusing one",
                        metadata: [
                            "socket": "\(frontEnd.name)", "max_clients": "\(frontEnd.maxClients)",
                        ])
                    return refuse(channel, frontEnd.refusal(.tooManyClients(limit: frontEnd.maxClients)))
                case .tooManyFromAddress(let limit):
                    logger.warning(
                        "too many clients from one address; refusing one",
                        metadata: [
                            "socket": "\(frontEnd.name)", "address": "\(address ?? "?")", "limit": "\(limit)",
                        ])
                    return refuse(channel, frontEnd.refusal(.tooManyFromOneAddress(limit: limit)))
                }
                if isTCP {
                    let who = ClientPeer(credentials: nil, description: channel.remoteAddress.map { "\($0)" } ?? "tcp")
                    return frontEnd.serve(channel, frontEnd.tcpAccess, who)
                }
                return PeerCredentials.of(channel).flatMap { peer in
                    let who = ClientPeer(credentials: peer, description: peer.map { "uid=\($0.uid) pid=\($0.pid)" } ?? "uid=? pid=?")
                    guard !frontEnd.policy.isOpen else { return frontEnd.serve(channel, .control, who) }
                    let access = peer.map { frontEnd.policy.level(uid: $0.uid, groups: $0.groups, daemonUID: getuid()) } ?? .none
                    guard access == .none else { return frontEnd.serve(channel, access, who) }
                    logger.warning(
                        "refusing a client the access lists do not name",
                        metadata: [
                            "socket": "\(frontEnd.name)",
                            "uid": "\(peer.map { String($0.uid) } ?? "?")", "pid": "\(peer.map { String($0.pid) } ?? "?")",
                        ])
                    return refuse(channel, frontEnd.refusal(.notAllowed(uid: peer?.uid)))
                }
            }
    }

    /// Writes the refusal, then closes the connection.
    private static func refuse(_ channel: any Channel, _ bytes: ByteBuffer) -> EventLoopFuture<Void> {
        channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(RefuseConnectionHandler(refusal: bytes))
        }
    }

    /// Bound under a private name, given its mode and group, then renamed into place: no client
    /// can reach it before its permissions are the configured ones.
    private static func bindUnix(_ bootstrap: ServerBootstrap, path: String, frontEnd: FrontEnd) async throws -> any Channel {
        let staging = stagingPath(for: path)
        let channel = try await bootstrap.bind(unixDomainSocketPath: staging, cleanupExistingSocketFile: true).get()
        do {
            guard chmod(staging, mode_t(frontEnd.socketMode)) == 0 else {
                throw ServerError("cannot set the mode of \(path): \(String(cString: strerror(errno)))")
            }
            if let group = frontEnd.socketGroup, chown(staging, uid_t.max, gid_t(group)) != 0 {
                throw ServerError("cannot give \(path) to group \(group): \(String(cString: strerror(errno)))")
            }
            if staging != path, rename(staging, path) != 0 {
                throw ServerError("cannot move \(staging) to \(path): \(String(cString: strerror(errno)))")
            }
        } catch {
            try? await channel.close()
            unlink(staging)
            throw error
        }
        return channel
    }

    /// A private name beside `path` to bind under first; `path` itself when that would not fit
    /// a socket address (108 bytes). The file's own name keeps two front-ends' names apart.
    static func stagingPath(for path: String) -> String {
        let directory = (path as NSString).deletingLastPathComponent
        let name = (path as NSString).lastPathComponent
        let staging = (directory.isEmpty ? "" : directory + "/") + ".\(name).\(getpid())"
        return staging.utf8.count < 108 ? staging : path
    }

    /// Creates the socket's directory (0755) when missing; systemd's RuntimeDirectory does it for the service.
    static func prepareDirectory(for path: String) throws {
        let directory = (path as NSString).deletingLastPathComponent
        guard !directory.isEmpty else { return }
        do {
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o755])
        } catch {
            throw ServerError("cannot create socket directory \(directory): \(error.localizedDescription)")
        }
    }

    /// Stops accepting, closes every connection, and removes the socket file this daemon made
    /// (never one that replaced it since).
    package func close() async {
        try? await channel.close()
        await connections.closeAll()
        if let ownedFile, let now = SocketProbe.identity(ownedFile.path), now == (ownedFile.device, ownedFile.inode) {
            try? FileManager.default.removeItem(atPath: ownedFile.path)
        }
    }
}

/// The open client connections of one front-end, so that shutdown can close them all, and how
/// many come from each TCP address.
final class OpenConnections: Sendable {
    private struct Open {
        var channels: [ObjectIdentifier: any Channel] = [:]
        var byAddress: [String: Int] = [:]
    }

    private let open = Locked(Open())

    enum Admission: Equatable {
        case admitted
        case tooMany
        case tooManyFromAddress(limit: Int)
    }

    /// Records a new connection, unless `limit` are already open, or `perAddress` from `address`.
    func add(_ channel: any Channel, limit: Int, address: String? = nil, perAddress: Int? = nil) -> Admission {
        let id = ObjectIdentifier(channel)
        let admission = open.withLock { open -> Admission in
            guard open.channels.count < limit else { return .tooMany }
            if let address, let perAddress {
                guard open.byAddress[address, default: 0] < perAddress else { return .tooManyFromAddress(limit: perAddress) }
                open.byAddress[address, default: 0] += 1
            }
            open.channels[id] = channel
            return .admitted
        }
        guard admission == .admitted else { return admission }
        let counted = perAddress == nil ? nil : address
        channel.closeFuture.whenComplete { [weak self] _ in
            self?.open.withLock { open in
                open.channels.removeValue(forKey: id)
                if let counted {
                    let left = open.byAddress[counted, default: 1] - 1
                    open.byAddress[counted] = left > 0 ? left : nil
                }
            }
        }
        return .admitted
    }

    func closeAll() async {
        for channel in open.withLock({ Array($0.channels.values) }) { try? await channel.close() }
    }
}

/// Answers a refused connection with the protocol's refusal, then closes it.
private final class RefuseConnectionHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    private let refusal: ByteBuffer

    init(refusal: ByteBuffer) { self.refusal = refusal }

    func channelActive(context: ChannelHandlerContext) {
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(refusal)).whenComplete { _ in channel.close(promise: nil) }
    }
}

/// A front-end that cannot serve, in words for the person starting the daemon.
package struct ServerError: Error, CustomStringConvertible {
    package let description: String
    package init(_ description: String) { self.description = description }
}
