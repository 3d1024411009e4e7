import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// One daemon per state directory: an exclusive `flock` on `tonearmd.lock` in it, held for the
/// process's life (the kernel lets go when the process ends, however it ends, so a `kill -9`
/// leaves no stale lock). The file holds the holder's pid, so a second daemon can name it.
package final class StateDirectoryLock: Sendable {
    package static let name = "tonearmd.lock"
    private let descriptor: Int32

    package enum Failure: Error, CustomStringConvertible {
        /// Another process holds the lock: the pid it wrote, if readable.
        case held(path: String, pid: Int32?)
        case cannot(String)

        package var description: String {
            switch self {
            case .held(let path, let pid):
                "another tonearmd (pid \(pid.map(String.init) ?? "unknown")) uses this state directory (\(path) is locked)"
            case .cannot(let why): why
            }
        }
    }

    /// Takes the lock in `file`'s directory (created if missing), or says who has it.
    package init(for file: StateFile) throws(Failure) {
        do {
            try file.createDirectory()
        } catch {
            throw .cannot(error.description)
        }
        let path = file.directory + "/" + Self.name
        let fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .cannot("cannot open \(path): \(String(cString: strerror(errno)))") }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            close(fd)
            throw .cannot("\(path) is not a regular file")
        }
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            if errno == EINTR { continue }
            let code = errno
            defer { close(fd) }
            guard code == EWOULDBLOCK else { throw .cannot("cannot lock \(path): \(String(cString: strerror(code)))") }
            throw .held(path: path, pid: Self.pid(in: fd))
        }
        let text = "\(getpid())\n"
        ftruncate(fd, 0)
        _ = text.withCString { pwrite(fd, $0, strlen($0), 0) }
        descriptor = fd
    }

    private static func pid(in fd: Int32) -> Int32? {
        var buffer = [UInt8](repeating: 0, count: 32)
        let count = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return nil }
        return Int32(String(decoding: buffer[..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }

    deinit { close(descriptor) }
}
