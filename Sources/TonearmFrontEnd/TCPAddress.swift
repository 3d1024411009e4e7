#if canImport(Glibc)
    import Glibc
#endif

/// A TCP address a front-end listens on: `mpd.bind`, `http.bind`.
package struct TCPAddress: Sendable, Equatable, CustomStringConvertible {
    package var host: String
    package var port: Int

    /// "127.0.0.1:6600", "[::1]:6600", "localhost:6600".
    package init?(_ text: String) {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
            (1...65_535).contains(port)
        else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else { return nil }
        self.host = host
        self.port = port
    }

    package var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// Reachable only from this machine: `localhost`, `::1`, or an IPv4 address in 127.0.0.0/8
    /// (an address, not a name: a host name such as "127.example.com" may resolve anywhere).
    package var isLoopback: Bool {
        if host == "localhost" || host == "::1" { return true }
        var address = in_addr()
        guard inet_pton(AF_INET, host, &address) == 1 else { return false }
        return UInt32(bigEndian: address.s_addr) >> 24 == 127
    }
}
