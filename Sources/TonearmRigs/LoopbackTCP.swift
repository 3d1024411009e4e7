import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Binds a TCP socket to 127.0.0.1:`port` (0: a free one); returns the port, or nil (errno says why).
package func bindLoopback(_ fd: Int32, port: Int = 0) -> Int? {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = UInt16(port).bigEndian
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
            bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
        }
    }
    return bound ? Int(UInt16(bigEndian: address.sin_port)) : nil
}

/// A TCP port free on the loopback interface right now.
package func freeTCPPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    defer { close(fd) }
    guard let port = bindLoopback(fd) else { throw LineClient.Failure(description: "no free port: errno \(errno)") }
    return port
}

/// A TCP socket listening on 127.0.0.1:`port` (0: a free one), with SO_REUSEADDR so that a port
/// just closed can be listened on again: its descriptor and port.
package func listenOnLoopback(port: Int = 0, backlog: Int32 = 64) throws -> (fd: Int32, port: Int) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw LineClient.Failure(description: "socket() failed: errno \(errno)") }
    var one: Int32 = 1
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
    guard let bound = bindLoopback(fd, port: port), listen(fd, backlog) == 0 else {
        let code = errno
        close(fd)
        throw LineClient.Failure(description: "cannot listen on 127.0.0.1:\(port): errno \(code)")
    }
    return (fd, bound)
}

/// A TCP connection to 127.0.0.1:`port`, reads timing out after `timeout` seconds; nil when
/// nothing accepts there. The caller closes it.
package func connectLoopback(port: Int, timeout: Int = 5) -> Int32? {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { return nil }
    var readTimeout = timeval(tv_sec: timeout, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &readTimeout, socklen_t(MemoryLayout<timeval>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = UInt16(port).bigEndian
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
    }
    guard connected else {
        close(fd)
        return nil
    }
    return fd
}

/// Accepts a connection whose descriptor no child process inherits (tests run side by side, and
/// a daemon started by one must not hold another's connection open). Glibc's module has no
/// accept4, so the flag is set just after.
package func acceptClosingOnExec(_ listener: Int32) -> Int32 {
    let fd = accept(listener, nil, nil)
    if fd >= 0 { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
    return fd
}

/// A UDP port on 127.0.0.1 nobody uses now (a daemon's own SSDP port in tests and the bench).
package func freeUDPPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    defer { close(fd) }
    guard let port = bindLoopback(fd) else { throw LineClient.Failure(description: "no free UDP port: errno \(errno)") }
    return port
}

/// This machine's first IPv4 address on an interface that is up, loopback aside (what SSDP and a
/// renderer bound to a real interface use), from `ip -o -4 addr show scope global up`.
package func realInterface() -> (name: String, address: String)? {
    guard let shown = try? runTool("/usr/sbin/ip", ["-o", "-4", "addr", "show", "scope", "global", "up"], timeout: 10),
        shown.status == 0
    else { return nil }
    for line in shown.output.split(separator: "\n") {
        let fields = line.split(separator: " ")
        guard fields.count > 3, let at = fields.firstIndex(of: "inet"), at + 1 < fields.count else { continue }
        let address = fields[at + 1].split(separator: "/").first.map(String.init) ?? ""
        if !address.isEmpty { return (String(fields[1]), address) }
    }
    return nil
}
