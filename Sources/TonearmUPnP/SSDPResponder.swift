import Foundation
import Logging
import NIOCore
import NIOPosix
import TonearmProtocol
import TonearmSync

/// An address the renderer serves on: its interface, and the description's URL there.
struct ServedAddress: Sendable {
    var interface: String
    var address: String
    var netmask: String?
    var port: Int
    var location: String { "http://\(address):\(port)\(RendererDescription.path)" }
}

/// SSDP: the renderer's announcements (`ssdp:alive` at start and every max-age/2, `ssdp:byebye`
/// at stop) and its answers to M-SEARCH, for the root device, its UDN, its device type and
/// each service type. Answers wait MX's random delay (at most a second), and cost bounded work
/// whatever the network sends: at most 64 answers wait at once, and at most 40 leave a second.
final class SSDPResponder: Sendable {
    static let group = "239.255.255.250"

    private let udn: String
    private let bootID: Int
    private let addresses: [ServedAddress]
    private let port: Int
    private let logger: Logger
    private let channels = Locked<(listen: (any Channel)?, senders: [(ServedAddress, any Channel)], alive: RepeatedTask?)>(
        (nil, [], nil))
    private let budget = Locked((tokens: 40.0, refilled: ContinuousClock.now, waiting: 0))

    init(udn: String, bootID: Int, addresses: [ServedAddress], port: Int, logger: Logger) {
        self.udn = udn
        self.bootID = bootID
        self.addresses = addresses
        self.port = port
        self.logger = logger
    }

    /// The notification types, each with its USN.
    var targets: [(nt: String, usn: String)] {
        [
            ("upnp:rootdevice", "\(udn)::upnp:rootdevice"), (udn, udn),
            (RendererDescription.deviceType, "\(udn)::\(RendererDescription.deviceType)"),
        ]
            + RendererService.allCases.map { ($0.type, "\(udn)::\($0.type)") }
    }

    func start(group: any EventLoopGroup) async throws {
        let listen = try await DatagramBootstrap(group: group)
            .channelOption(.socketOption(.so_reuseaddr), value: 1)
            .channelOption(ChannelOptions.socketOption(NIOBSDSocket.Option(rawValue: SO_REUSEPORT)), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(SearchHandler(self)) }
            }
            .bind(host: "0.0.0.0", port: port).get()
        let devices = (try? System.enumerateDevices()) ?? []
        for served in addresses {
            guard let device = devices.first(where: { $0.name == served.interface && $0.address?.ipAddress == served.address }),
                let multicast = listen as? MulticastChannel
            else { continue }
            do {
                try await multicast.joinGroup(try SocketAddress(ipAddress: Self.group, port: port), device: device).get()
            } catch {
                logger.notice(
                    "SSDP cannot join the multicast group here: only direct searches are answered",
                    metadata: ["interface": "\(served.interface)", "error": "\(error)"])
            }
        }
        var senders: [(ServedAddress, any Channel)] = []
        for served in addresses {
            do {
                let sender = try await DatagramBootstrap(group: group).bind(host: served.address, port: 0).get()
                if let options = sender as? SocketOptionProvider {
                    try await options.setIPMulticastIF(try Self.inAddr(served.address)).get()
                    try await options.setIPMulticastTTL(2).get()
                }
                senders.append((served, sender))
            } catch {
                logger.notice("SSDP cannot announce here", metadata: ["interface": "\(served.interface)", "error": "\(error)"])
            }
        }
        let alive = listen.eventLoop.scheduleRepeatedTask(
            initialDelay: TimeAmount.seconds(Int64(UPnPSettings.maxAge / 2)), delay: TimeAmount.seconds(Int64(UPnPSettings.maxAge / 2))
        ) { _ in self.announce(alive: true) }
        channels.withLock { $0 = (listen, senders, alive) }
        announce(alive: true)
    }

    /// Byebye, then the sockets close.
    func stop() async {
        let (listen, senders, alive) = channels.withLock { c in
            defer { c = (nil, [], nil) }
            return c
        }
        alive?.cancel()
        for (served, sender) in senders {
            for message in messages(alive: false, at: served) {
                try? await sender.writeAndFlush(message).get()
            }
            try? await sender.close()
        }
        try? await listen?.close()
    }

    private static func inAddr(_ address: String) throws -> in_addr {
        var value = in_addr()
        guard inet_pton(AF_INET, address, &value) == 1 else { throw SocketAddressError.failedToParseIPString(address) }
        return value
    }

    private func messages(alive: Bool, at served: ServedAddress) -> [AddressedEnvelope<ByteBuffer>] {
        guard let destination = try? SocketAddress(ipAddress: Self.group, port: port) else { return [] }
        return targets.map { target in
            var text = "NOTIFY * HTTP/1.1\r\nHOST: \(Self.group):\(port)\r\nNT: \(target.nt)\r\nNTS: ssdp:\(alive ? "alive" : "byebye")\r\n"
            text += "USN: \(target.usn)\r\nBOOTID.UPNP.ORG: \(bootID)\r\nCONFIGID.UPNP.ORG: 1\r\n"
            if alive {
                text += "CACHE-CONTROL: max-age=\(UPnPSettings.maxAge)\r\nLOCATION: \(served.location)\r\n"
                text += "SERVER: \(RendererHTTPHandler.server)\r\n"
            }
            return AddressedEnvelope(remoteAddress: destination, data: ByteBuffer(string: text + "\r\n"))
        }
    }

    private func announce(alive: Bool) {
        for (served, sender) in channels.withLock({ $0.senders }) {
            for message in messages(alive: alive, at: served) { sender.writeAndFlush(message, promise: nil) }
        }
    }

    /// The answers to one M-SEARCH (none when it is not one, or asks for something else).
    func answers(to datagram: String, from sender: SocketAddress) -> (delay: Double, replies: [ByteBuffer])? {
        let lines = datagram.split(separator: "\r\n", omittingEmptySubsequences: false)
        guard let first = lines.first, first.uppercased().hasPrefix("M-SEARCH * HTTP/1.") else { return nil }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].trimmingCharacters(in: .whitespaces).uppercased()] =
                line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        guard headers["MAN"]?.trimmingCharacters(in: .init(charactersIn: "\"")) == "ssdp:discover", let st = headers["ST"] else {
            return nil
        }
        let matching = st == "ssdp:all" ? targets : targets.filter { $0.nt == st }
        guard !matching.isEmpty, let served = servedAddress(for: sender) else { return nil }
        // A bad MX is ignored (UDA 1.1): NaN or infinity would make no delay at all.
        guard let asked = Double(headers["MX"] ?? "1"), asked.isFinite else { return nil }
        let mx = min(max(asked, 0), 1)
        let date = Self.httpDate()
        let replies = matching.map { target in
            var text = "HTTP/1.1 200 OK\r\nCACHE-CONTROL: max-age=\(UPnPSettings.maxAge)\r\nDATE: \(date)\r\nEXT:\r\n"
            text += "LOCATION: \(served.location)\r\nSERVER: \(RendererHTTPHandler.server)\r\nST: \(target.nt)\r\nUSN: \(target.usn)\r\n"
            text += "BOOTID.UPNP.ORG: \(bootID)\r\nCONFIGID.UPNP.ORG: 1\r\n\r\n"
            return ByteBuffer(string: text)
        }
        return (Double.random(in: 0...mx), replies)
    }

    /// The address a searcher reaches the renderer at: loopback for a loopback searcher when
    /// served there, else the interface whose network holds it. Searchers elsewhere are not
    /// answered: a spoofed search cannot turn the renderer on a third party.
    private func servedAddress(for sender: SocketAddress) -> ServedAddress? {
        guard let ip = sender.ipAddress, let peer = try? Self.inAddr(ip) else { return nil }
        if ip.hasPrefix("127.") { return addresses.first { $0.address.hasPrefix("127.") } ?? addresses.first }
        for served in addresses {
            guard let maskText = served.netmask, let mask = try? Self.inAddr(maskText), let own = try? Self.inAddr(served.address) else {
                continue
            }
            if peer.s_addr & mask.s_addr == own.s_addr & mask.s_addr { return served }
        }
        return nil
    }

    /// Takes `count` answers from the budget; false: over it, dropped.
    func admit(_ count: Int) -> Bool {
        budget.withLock { b in
            let now = ContinuousClock.now
            let elapsed = now - b.refilled
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            b.tokens = min(40, b.tokens + seconds * 40)
            b.refilled = now
            guard b.tokens >= Double(count), b.waiting + count <= 64 else { return false }
            b.tokens -= Double(count)
            b.waiting += count
            return true
        }
    }

    func sent(_ count: Int) { budget.withLock { $0.waiting -= count } }

    private static func httpDate() -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: Date())
    }
}

/// The SSDP socket's reader: M-SEARCHes answered after their delay, everything else ignored.
private final class SearchHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    typealias OutboundOut = AddressedEnvelope<ByteBuffer>
    private let responder: SSDPResponder

    init(_ responder: SSDPResponder) { self.responder = responder }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        guard envelope.data.readableBytes <= 2048,
            let answer = responder.answers(
                to: String(decoding: envelope.data.readableBytesView, as: UTF8.self), from: envelope.remoteAddress),
            responder.admit(answer.replies.count)
        else { return }
        let channel = context.channel
        let responder = self.responder
        let destination = envelope.remoteAddress
        let replies = answer.replies
        context.eventLoop.scheduleTask(in: .milliseconds(Int64(answer.delay * 1000))) {
            for reply in replies {
                channel.writeAndFlush(AddressedEnvelope(remoteAddress: destination, data: reply), promise: nil)
            }
            responder.sent(replies.count)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {}
}
