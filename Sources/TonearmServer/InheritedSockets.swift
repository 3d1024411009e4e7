import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Listening sockets systemd passed at start (socket activation, sd_listen_fds(3)): with
/// `LISTEN_PID` equal to ours, descriptors 3 … 3 + `LISTEN_FDS` − 1, named by `LISTEN_FDNAMES`
/// (colon-separated, e.g. `FileDescriptorName=control`). Read once; the variables are removed so
/// no child process takes the sockets for its own.
package struct InheritedSockets: Sendable {
    package struct Socket: Sendable, Equatable {
        package let descriptor: CInt
        package let name: String
    }

    package let sockets: [Socket]

    package init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        defer {
            unsetenv("LISTEN_PID")
            unsetenv("LISTEN_FDS")
            unsetenv("LISTEN_FDNAMES")
        }
        guard let pid = environment["LISTEN_PID"].flatMap(Int32.init), pid == getpid(),
            let count = environment["LISTEN_FDS"].flatMap(Int.init), count > 0, count < 1024
        else {
            sockets = []
            return
        }
        let names = environment["LISTEN_FDNAMES"]?.split(separator: ":", omittingEmptySubsequences: false).map(String.init) ?? []
        sockets = (0..<count).map { index in
            let descriptor = CInt(3 + index)
            // Ours from now on: not inherited by anything the daemon might start.
            _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
            return Socket(descriptor: descriptor, name: index < names.count ? names[index] : "unknown")
        }
    }

    /// The control socket: the one named "control", else the first one not named "mpd" (systemd
    /// names sockets after their unit, "tonearmd.socket", unless `FileDescriptorName=` says otherwise).
    package var control: Socket? {
        sockets.first { $0.name == "control" } ?? sockets.first { $0.name != "mpd" }
    }

    /// MPD's socket: the one named "mpd" (`FileDescriptorName=mpd`).
    package var mpd: Socket? {
        sockets.first { $0.name == "mpd" }
    }

    /// The path a Unix socket is bound to (for logs), or nil.
    package static func path(of descriptor: CInt) -> String? {
        var address = sockaddr_un()
        var length = socklen_t(MemoryLayout<sockaddr_un>.size)
        let result = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard result == 0, address.sun_family == sa_family_t(AF_UNIX) else { return nil }
        return withUnsafeBytes(of: &address.sun_path) { raw in
            let bytes = raw.prefix(while: { $0 != 0 })
            return bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self)
        }
    }
}
