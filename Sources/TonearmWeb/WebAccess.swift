import Foundation
import NIOCore
import NIOHTTP1
import TonearmSync

/// Who may use the web remote. With no password (a loopback bind), everyone who reaches it;
/// with one, a browser that proved it once and holds the token this daemon made at start (an
/// HttpOnly cookie, so the page's scripts never see it). Wrong passwords make the next try from
/// the same address wait, longer each time, and are logged with the address.
final class WebAccess: Sendable {
    static let cookieName = "tonearm_token"
    let password: String?
    private let token: String
    /// Wrong tries by peer address: how many, and until when the next one is refused.
    private let failures = Locked<[String: (count: Int, until: NIODeadline)]>([:])

    init(password: String?) {
        self.password = password
        var generator = SystemRandomNumberGenerator()
        token = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }

    /// The request carries what control needs: nothing without a password, else the token.
    func allows(_ head: HTTPRequestHead) -> Bool {
        guard password != nil else { return true }
        return Self.cookie(Self.cookieName, in: head.headers).map { Self.sameBytes($0, token) } ?? false
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
              let port = Int(hostHeader[hostHeader.index(after: colon)...]) else { return authority(hostHeader, nil) }
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
        return failures.withLock { failures in
            if let failed = failures[peer], failed.until > now {
                return .wait(seconds: Int((failed.until - now).nanoseconds / 1_000_000_000) + 1)
            }
            guard Self.sameBytes(attempt, password) else {
                let count = (failures[peer]?.count ?? 0) + 1
                // 1, 2, 4 … seconds, at most a minute.
                failures[peer] = (count, now + .seconds(Int64(min(60, 1 << min(count - 1, 6)))))
                if failures.count > 4096 { failures = failures.filter { $0.value.until > now } }
                return .refused
            }
            failures[peer] = nil
            return .accepted(cookie: "\(Self.cookieName)=\(token); Path=/; HttpOnly; SameSite=Strict; Max-Age=31536000")
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
        let x = Array(a.utf8), y = Array(b.utf8)
        var difference = x.count ^ y.count
        for index in 0..<max(x.count, y.count) {
            difference |= Int((index < x.count ? x[index] : 0) ^ (index < y.count ? y[index] : 0))
        }
        return difference == 0
    }
}
