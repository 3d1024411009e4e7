import Foundation
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import TonearmFrontEnd
import TonearmLibrary
import TonearmMPD
import TonearmPlayer
import TonearmProtocol
import TonearmRPC
import TonearmSync
import TonearmUPnP
import TonearmWeb

/// The control sockets: JSON-RPC 2.0 on a Unix domain socket (`RPCServer`) and, with `mpd`,
/// MPD's text protocol on its own sockets (`MPDServer`), both serving the one player on one
/// event loop through the shared request path (`TonearmFrontEnd`). A `Service`: on
/// graceful shutdown it stops accepting, closes every connection, stops playback and removes the
/// socket files it made.
package final class ControlServer: Service, Sendable {
    package let socketPath: String
    package let maxLineLength: Int
    package let maxClients: Int
    private let player: Player
    private let logger: Logger
    /// A listening socket systemd passed (socket activation): served instead of binding
    /// `socketPath`, and never unlinked (the daemon did not create it).
    private let inherited: CInt?
    private let ready: (@Sendable () -> Void)?
    private let stopping: (@Sendable () -> Void)?
    private let watchdog: Watchdog?
    private let security: ControlSecurity
    /// MPD's protocol on its own sockets, serving the same player; nil: off.
    private let mpd: MPDSettings?
    /// The music library MPD's database commands read, if there is one.
    private let library: Library?
    /// MPD clients' stored playlists.
    private let playlists: PlaylistStore?
    private let limits: ClientLimits
    /// The web remote; nil: off.
    private let http: WebSettings?
    /// The UPnP/DLNA renderer; nil: off.
    private let upnp: UPnPRenderer?

    /// - Parameters:
    ///   - ready: called once the socket accepts connections.
    ///   - stopping: called when a graceful shutdown begins.
    ///   - watchdog: pinged from the event loop while the daemon is healthy.
    package init(
        socketPath: String, player: Player, logger: Logger, maxLineLength: Int = 64 * 1024,
        maxClients: Int = 256, inherited: CInt? = nil, ready: (@Sendable () -> Void)? = nil,
        stopping: (@Sendable () -> Void)? = nil, watchdog: Watchdog? = nil,
        security: ControlSecurity = ControlSecurity(), mpd: MPDSettings? = nil, library: Library? = nil,
        playlists: PlaylistStore? = nil, limits: ClientLimits = ClientLimits(), http: WebSettings? = nil,
        upnp: UPnPRenderer? = nil
    ) {
        self.http = http
        self.upnp = upnp
        self.security = security
        self.library = library
        self.playlists = playlists
        self.limits = limits
        self.mpd = mpd
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

    package func run() async throws {
        // One event-loop thread is plenty for the control sockets and keeps the daemon small.
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        do {
            try await serve(on: group)
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
        try? await group.shutdownGracefully()
    }

    /// What clients of either front-end may name as a source.
    private var sources: SourcePolicy { SourcePolicy(roots: security.roots, input: player.input) }

    private func serve(on group: MultiThreadedEventLoopGroup) async throws {
        let longReplies = LongReplies()
        defer { longReplies.shutdown() }
        let mpd = mpd.flatMap { settings in
            settings.enabled
                ? MPDServer(
                    settings: settings, player: player, sources: sources, library: library,
                    playlists: playlists, longReplies: longReplies, controlSocket: socketPath, logger: logger) : nil
        }
        // The control socket is bound last: once it accepts, every other socket does too, so a
        // script that waits for it may go on to use MPD's.
        let rpc = RPCServer(player: player, library: library, playlists: playlists, logger: logger)
        let frontEnds =
            (mpd?.frontEnds(security: security) ?? []) + [
                rpc.frontEnd(
                    address: .unix(path: socketPath, inherited: inherited), security: security, maxClients: maxClients,
                    maxLineLength: maxLineLength, limits: limits, sources: sources, longReplies: longReplies)
            ]
        var listeners: [Listener] = []
        // The web remote is a convenience: when its port is taken, the daemon serves on without it.
        if let http, http.enabled {
            let web = WebServer(
                settings: http,
                rpc: rpc.service(
                    maxLineLength: maxLineLength, limits: limits, sources: sources,
                    longReplies: longReplies),
                player: player, library: library, sources: sources, longReplies: longReplies, logger: logger)
            do {
                let listener = try await Listener.bind(web.frontEnd(), group: group, logger: logger)
                listeners.append(listener)
                logger.info(
                    "listening",
                    metadata: [
                        "protocol": "http", "address": "\(listener.channel.localAddress.map { "\($0)" } ?? "\(http.bind)")",
                        "from": "bound here",
                    ])
            } catch {
                logger.error("the web remote is not served", metadata: ["address": "\(http.bind)", "error": "\(error)"])
            }
        }
        // The renderer too: a network without IPv4 or a taken port leaves the daemon serving without it.
        if let upnp {
            do {
                listeners += try await upnp.start(group: group)
            } catch {
                logger.error("the UPnP renderer is not served", metadata: ["error": "\(error)"])
            }
        }
        do {
            for frontEnd in frontEnds {
                listeners.append(try await Listener.bind(frontEnd, group: group, logger: logger))
                logger.info(
                    "listening",
                    metadata: [
                        "protocol": "\(frontEnd.name)", "address": "\(frontEnd.address)",
                        "from": "\(frontEnd.address.isInherited ? "systemd (socket activation)" : "bound here")",
                    ])
            }
        } catch {
            for listener in listeners { await listener.close() }
            throw error
        }
        mpd?.start()
        let pings = watchdog?.start(on: listeners[0].channel.eventLoop)
        ready?()

        // Serve until asked to stop (SIGTERM/SIGINT through the ServiceGroup), or a listener fails.
        await withTaskGroup(of: Void.self) { waiters in
            waiters.addTask { try? await gracefulShutdown() }
            for listener in listeners {
                waiters.addTask { try? await listener.channel.closeFuture.get() }
            }
            await waiters.next()
            // Waiting on closeFuture cannot be cancelled: closing the listeners ends those waiters.
            waiters.cancelAll()
            for listener in listeners { listener.channel.close(promise: nil) }
        }
        logger.info("shutting down")
        stopping?()
        pings?.cancel()
        mpd?.stop()
        await upnp?.stop()
        for listener in listeners { await listener.close() }
        await player.shutdown()
    }
}

extension ListenAddress {
    var isInherited: Bool {
        if case .unix(_, .some) = self { return true }
        return false
    }
}
