import Foundation
import Logging
import NIOCore
import NIOPosix
import TonearmFrontEnd
import TonearmPlayer
import TonearmProtocol
import TonearmSync

/// The UPnP/DLNA MediaRenderer (`[upnp]`): SSDP, the HTTP listener for the description,
/// control and events, and the renderer that casts through the player. Started and stopped by
/// the control server, on its event loop.
package final class UPnPRenderer: Sendable {
    private let settings: UPnPSettings
    private let player: Player
    private let stateDirectory: String
    private let sinkTypes: [String]
    private let logger: Logger
    private let running = Locked<Running?>(nil)

    /// - Parameter sinkTypes: the MIME types this daemon's FFmpeg decodes (ConnectionManager's Sink).
    package init(settings: UPnPSettings, player: Player, stateDirectory: String, sinkTypes: [String], logger: Logger) {
        self.settings = settings
        self.player = player
        self.stateDirectory = stateDirectory
        self.sinkTypes = sinkTypes
        self.logger = logger
    }

    /// The IPv4 addresses of `names` (nil: every IPv4 interface but loopback's).
    static func addresses(_ names: [String]?) throws -> [(interface: String, address: String, netmask: String?)] {
        let devices = try System.enumerateDevices()
        var found: [(String, String, String?)] = []
        for device in devices {
            guard case .v4 = device.address, let ip = device.address?.ipAddress else { continue }
            if let names {
                guard names.contains(device.name) else { continue }
            } else if ip.hasPrefix("127.") || !device.multicastSupported {
                continue
            }
            if !found.contains(where: { $0.1 == ip }) { found.append((device.name, ip, device.netmask?.ipAddress)) }
        }
        return found
    }

    /// Binds and announces; returns the listeners to serve and close with the others.
    package func start(group: any EventLoopGroup) async throws -> [Listener] {
        let found = try Self.addresses(settings.interfaces)
        guard !found.isEmpty else {
            throw ServerError(
                "upnp: no IPv4 interface to serve on (upnp.interfaces = \(settings.interfaces.map { "\($0)" } ?? "every one but loopback"))"
            )
        }
        let identity = RendererIdentity.load(directory: stateDirectory)
        let loop = group.next()
        let events = EventHub(eventLoop: loop, maximumSubscribers: settings.maxSubscribers, logger: logger)
        let sink = sinkTypes.map { "http-get:*:\($0):*" }.joined(separator: ",")
        let renderer = Renderer(player: player, settings: settings, sinkProtocolInfo: sink, events: events, logger: logger)
        var listeners: [Listener] = []
        var served: [ServedAddress] = []
        var port = settings.port
        let description = RendererDescription.document(name: settings.friendlyName, udn: identity.udn, version: TonearmVersion.string)
        // The Host names accepted: known once every address is bound.
        let hosts = Locked<Set<String>>([])
        do {
            for (interface, address, netmask) in found {
                let shared = RendererHTTPHandler.Context(
                    renderer: renderer, events: events, description: description, hosts: [], logger: logger)
                let frontEnd = FrontEnd(
                    name: "upnp", address: .tcp(host: address, port: port), maxClients: 64, socketMode: 0, socketGroup: nil,
                    policy: AccessPolicy(), tcpAccess: .control,
                    refusal: { _ in
                        ByteBuffer(string: "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                    },
                    maxClientsPerAddress: 16,
                    serve: { channel, _, peer in
                        channel.eventLoop.makeCompletedFuture {
                            var context = shared
                            context.hosts = hosts.withLock { $0 }
                            try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                            try channel.pipeline.syncOperations.addHandler(
                                RendererHTTPHandler(context, peer: channel.remoteAddress?.ipAddress ?? "\(peer)"))
                        }
                    })
                let listener = try await Listener.bind(frontEnd, group: group, logger: logger)
                if port == 0 { port = listener.channel.localAddress?.port ?? 0 }
                listeners.append(listener)
                served.append(ServedAddress(interface: interface, address: address, netmask: netmask, port: port))
            }
        } catch {
            for listener in listeners { await listener.close() }
            throw error
        }
        hosts.withLock { names in
            for address in served { names.formUnion([address.address, "\(address.address):\(address.port)"]) }
        }
        let ssdp = SSDPResponder(udn: identity.udn, bootID: identity.bootID, addresses: served, port: settings.ssdpPort, logger: logger)
        do {
            try await ssdp.start(group: group)
        } catch {
            for listener in listeners { await listener.close() }
            throw ServerError("upnp: cannot listen for SSDP on port \(settings.ssdpPort): \(error)")
        }
        let news = Task { await Self.follow(player, renderer) }
        running.withLock { $0 = Running(ssdp: ssdp, renderer: renderer, news: news) }
        await renderer.refresh()
        for address in served {
            logger.info("listening", metadata: ["protocol": "upnp", "address": "\(address.location)", "udn": "\(identity.udn)"])
        }
        return listeners
    }

    /// Says byebye and stops following the player; the listeners are closed by their owner.
    package func stop() async {
        guard
            let running = running.withLock({ r in
                defer { r = nil }
                return r
            })
        else { return }
        running.news.cancel()
        await running.renderer.shutdown()
        await running.ssdp.stop()
    }

    /// Every transition, queue change and setting change refreshes what control points see.
    private static func follow(_ player: Player, _ renderer: Renderer) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { for await _ in player.transitions() { await renderer.refresh() } }
            group.addTask { for await _ in player.queueEventStream() { await renderer.refresh() } }
            group.addTask { for await _ in player.settingsEventStream() { await renderer.refresh() } }
        }
    }
}

struct Running: Sendable {
    var ssdp: SSDPResponder
    var renderer: Renderer
    var news: Task<Void, Never>
}
