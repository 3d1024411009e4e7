import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A Unix socket's address for `path` (tests only); nil when the path does not fit.
package func unixSocketAddress(_ path: String) -> sockaddr_un? {
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return nil }
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
        raw.copyBytes(from: bytes)
        raw[bytes.count] = 0
    }
    return address
}

/// Binds `fd` to `path`; returns bind's result.
package func bindUnixSocket(_ fd: Int32, _ path: String) -> Int32 {
    guard var address = unixSocketAddress(path) else { return -1 }
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
}

extension LineClient {
    /// Connects once something accepts at `path`, trying for up to `timeout` seconds; nil if nothing did.
    package static func waitingForSocket(_ path: String, timeout: Double = 10) -> LineClient? {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let client = try? LineClient(path: path) { return client }
            if Date() > deadline { return nil }
            usleep(25_000)
        }
    }
}
