import Foundation
import NIOCore
import TonearmProtocol

/// What is at a control socket's path before the daemon binds it. A live daemon there must not be
/// taken over (clients would reach only the new one, and the old one's shutdown would remove the
/// new one's socket); a stale socket file, left by a daemon that died, is replaced.
///
/// Written by hand on plain sockets: it runs once at start-up, before any event loop exists.
enum SocketProbe {
    enum Finding: Equatable {
        case nothing
        case stale
        /// Something accepts connections there; the peer's process id when the kernel says.
        case live(pid: Int32?)
    }

    static func probe(_ path: String) -> Finding {
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFSOCK else { return .nothing }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return .stale }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return .stale }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else { return .stale }
        // struct ucred (pid, uid, gid): Swift's Glibc module leaves it out (it needs _GNU_SOURCE).
        var credentials: (pid: Int32, uid: UInt32, gid: UInt32) = (0, 0, 0)
        var length = socklen_t(MemoryLayout.size(ofValue: credentials))
        let known = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0 && credentials.pid > 0
        return .live(pid: known ? credentials.pid : nil)
    }

    /// The socket file's identity, so that shutdown removes only the file it created.
    static func identity(_ path: String) -> (device: UInt64, inode: UInt64)? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return (UInt64(info.st_dev), UInt64(info.st_ino))
    }

    /// A bind failure in words, with the path.
    static func describe(_ error: any Error, path: String) -> String {
        let text = String(describing: error)
        if text.contains("UnixDomainSocketPathWrongType") {
            return "cannot listen on \(path): a file that is not a socket is in the way (move or remove it)"
        }
        if text.contains("unixDomainSocketPathTooLong") {
            return "cannot listen on \(path): the path is \(path.utf8.count) bytes, longer than a Unix socket allows (107)"
        }
        if let io = error as? IOError {
            return "cannot listen on \(path): \(String(cString: strerror(io.errnoCode)))"
        }
        return "cannot listen on \(path): \(text)"
    }
}
