import Foundation
import NIOCore
import NIOHTTP1
import TonearmFrontEnd
import TonearmSync

/// Who may use the web remote, and by which names. With no password (a loopback bind),
/// everyone who reaches it; with one, a browser that proved it once and holds the token this
/// daemon made at start (an HttpOnly cookie, so the page's scripts never see it). A second
/// password (`http.read_password`) earns a token of its own that only reads. Wrong passwords
/// make the next try from the same address wait, longer each time, and are logged with the
/// address.
final class WebAccess: Sendable {
    static let cookieName = "tonearm_token"
    let password: String?
    let readPassword: String?
    /// The names pages may reach this server by (lower case, no trailing dot).
    let hosts: Set<String>
    private let token: String
    private let readToken: String
    /// Wrong tries by peer address: how many, and until when the next one is refused.
    private let failures = Locked<[String: (count: Int, until: NIODeadline)]>([:])

    init(password: String?, readPassword: String? = nil, hosts: Set<String> = ["localhost"]) {
        self.password = password
        self.readPassword = readPassword
        self.hosts = Set(hosts.map(Self.normalized))
        token = Self.randomToken()
        readToken = Self.randomToken()
    }

    private static func randomToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }

    /// The names a server bound to `bind` answers to: `localhost`, the bind address when it
    /// is a name, this machine's host name (short, and with `.local` for mDNS), and `extra`.
    /// Addresses (IPv4, IPv6) need no listing: see `allowsHost`.
    static func hosts(bind: TCPAddress, extra: [String]) -> Set<String> {
        var names: Set<String> = ["localhost", bind.host]
        var buffer = [CChar](repeating: 0, count: 256)
        if gethostname(&buffer, buffer.count - 1) == 0 {
            let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if !name.isEmpty {
                names.insert(name)
                let short = name.split(separator: ".").first.map(String.init) ?? name
                names.insert(short)
                names.insert(short + ".local")
            }
        }
        names.formUnion(extra)
        return Set(names.map(normalized))
    }

    /// Whether the request names this server: its `Host` is an address (a page whose origin is
    /// an address reached this very server by it), or one of `hosts`. A name other than these
    /// is a page of another site whose DNS now points here: it may not even read the page.
    /// A request without `Host` (HTTP/1.0 tools; every browser sends one) is let through.
    func allowsHost(_ head: HTTPRequestHead) -> Bool {
        guard let header = head.headers.first(name: "host") else { return head.version.major == 1 && head.version.minor == 0 }
        let host = Self.hostName(hostHeader: header)
        if host.isEmpty { return false }
        if Self.isAddress(host) { return true }
        return hosts.contains(Self.normalized(host))
    }

    /// What the request may do: control, read, or nothing (no token).
    func level(_ head: HTTPRequestHead) -> AccessPolicy.Level {
        guard password != nil else { return .control }
        guard let presented = Self.cookie(Self.cookieName, in: head.headers) else { return .none }
        if Self.sameBytes(presented, token) { return .control }
        if readPassword != nil, Self.sameBytes(presented, readToken) { return .read }
        return .none
    }

    /// The request carries a token (or none is needed): it may at least read.
    func allows(_ head: HTTPRequestHead) -> Bool {
        level(head) != .none
    }

    private static func normalized(_ name: String) -> String {
        var name = name.lowercased()
        while name.hasSuffix(".") { name.removeLast() }
        return name
    }

    static func isAddress(_ host: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }

    /// The host of a `Host` header, without its port or an IPv6 address's brackets.
    static func hostName(hostHeader: String) -> String {
        let header = hostHeader.trimmingCharacters(in: .whitespaces)
        if header.hasPrefix("[") {
            guard let close = header.firstIndex(of: "]") else { return "" }
            return String(header[header.index(after: header.startIndex)..<close])
        }
        guard let colon = header.lastIndex(of: ":") else { return header }
        return String(header[..<colon])
    }

    /// A browser's request from a page of another site (a WebSocket or a form has no CORS to
    /// stop it) names that site in `Origin`; only this server's own pages may act. Tools that
    /// send no `Origin` are not browsers acting for a page.
    static func isSameOrigin(_ head: HTTPRequestHead) -> Bool {
        guard let origin = head.headers.first(name: "origin") else { return true }
        guard let host = head.headers.first(name: "host"), let url = URL(string: origin), let originHost = url.host else {
            return false
        }
        return authority(originHost, url.port) == authority(hostHeader: host)
    }

    /// "host:port", lower case, IPv6 without brackets, port 80 when none is named.
    private static func authority(_ host: String, _ port: Int?) -> String {
        var host = host.lowercased()
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return "\(host):\(port ?? 80)"
    }

    private static func authority(hostHeader: String) -> String {
        guard let colon = hostHeader.lastIndex(of: ":"), !hostHeader.hasSuffix("]"),
            let port = Int(hostHeader[hostHeader.index(after: colon)...])
        else { return authority(hostHeader, nil) }
        return authority(String(hostHeader[..<colon]), port)
    }

    enum Login: Equatable {
        /// The `Set-Cookie` value to send.
        case accepted(cookie: String)
        case refused
        /// Too soon after a wrong try: the seconds to wait.
        case wait(seconds: Int)
    }

    func login(_ attempt: String, from peer: String, now: NIODeadline = .now()) -> Login {
        guard let password else { return .accepted(cookie: "") }
        let readPassword = self.readPassword
        return failures.withLock { failures in
            if let failed = failures[peer], failed.until > now {
                return .wait(seconds: Int((failed.until - now).nanoseconds / 1_000_000_000) + 1)
            }
            let controls = Self.sameBytes(attempt, password)
            let reads = readPassword.map { Self.sameBytes(attempt, $0) } ?? false
            guard controls || reads else {
                let count = (failures[peer]?.count ?? 0) + 1
                // 1, 2, 4 … seconds, at most a minute.
                failures[peer] = (count, now + .seconds(Int64(min(60, 1 << min(count - 1, 6)))))
                if failures.count > 4096 { failures = failures.filter { $0.value.until > now } }
                return .refused
            }
            failures[peer] = nil
            let granted = controls ? token : readToken
            return .accepted(cookie: "\(Self.cookieName)=\(granted); Path=/; HttpOnly; SameSite=Strict; Max-Age=31536000")
        }
    }

    static func cookie(_ name: String, in headers: HTTPHeaders) -> String? {
        for header in headers[canonicalForm: "cookie"] {
            for pair in header.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                if parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces) == name {
                    return parts[1].trimmingCharacters(in: .whitespaces)
                }
            }
        }
        return nil
    }

    /// Compares without stopping at the first difference: the time says nothing of the secret.
    static func sameBytes(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8)
        let y = Array(b.utf8)
        var difference = x.count ^ y.count
        for index in 0..<max(x.count, y.count) {
            difference |= Int((index < x.count ? x[index] : 0) ^ (index < y.count ? y[index] : 0))
        }
        return difference == 0
    }
}
