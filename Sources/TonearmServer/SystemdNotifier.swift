import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// systemd's readiness protocol (sd_notify(3)): one datagram per message to the AF_UNIX socket
/// named by `$NOTIFY_SOCKET`, a path or, with a leading "@", an abstract name. Without it (not
/// under systemd, or `Type=simple`) every send does nothing.
///
/// Written by hand on a datagram socket rather than linking libsystemd: the protocol is one
/// `sendto` of a short text, and the daemon keeps one dependency fewer.
package final class SystemdNotifier: Sendable {
    private let address: sockaddr_un?
    private let addressLength: socklen_t
    /// The watchdog interval systemd asked for (`$WATCHDOG_USEC`, when `$WATCHDOG_PID` is ours or unset).
    package let watchdogInterval: Double?

    /// Reads the variables once, and removes them from the environment so that no child process
    /// mistakes itself for the service.
    package init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var length: socklen_t = 0
        var parsed: sockaddr_un?
        if let path = environment["NOTIFY_SOCKET"], !path.isEmpty, path.hasPrefix("/") || path.hasPrefix("@") {
            var bytes = Array(path.utf8)
            if bytes[0] == UInt8(ascii: "@") { bytes[0] = 0 }
            let capacity = MemoryLayout.size(ofValue: address.sun_path)
            if bytes.count < capacity {
                withUnsafeMutableBytes(of: &address.sun_path) { raw in
                    for (index, byte) in bytes.enumerated() { raw[index] = byte }
                }
                length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + (bytes[0] == 0 ? 0 : 1))
                parsed = address
            }
        }
        self.address = parsed
        addressLength = length
        var interval: Double?
        if let usec = environment["WATCHDOG_USEC"].flatMap(Double.init), usec > 0,
            environment["WATCHDOG_PID"].flatMap(Int32.init).map({ $0 == getpid() }) ?? true
        {
            interval = usec / 1_000_000
        }
        watchdogInterval = parsed == nil ? nil : interval
        unsetenv("NOTIFY_SOCKET")
        unsetenv("WATCHDOG_USEC")
        unsetenv("WATCHDOG_PID")
    }

    package var isActive: Bool { address != nil }

    /// Sends one message ("READY=1", "STATUS=…", "STOPPING=1", "WATCHDOG=1"). Returns whether it went.
    @discardableResult
    package func send(_ message: String) -> Bool {
        guard var address else { return false }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        let bytes = Array(message.utf8)
        let sent = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bytes.withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL), pointer, addressLength) }
            }
        }
        return sent == bytes.count
    }
}
