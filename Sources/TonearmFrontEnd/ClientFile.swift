import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A file a client names (a playlist, a cover image), opened for it, for both protocols. What is
/// checked is the file actually opened, never a name checked earlier: the descriptor's own path
/// (its link in /proc/self/fd) against `input.roots`, and its owner and mode against the peer
/// (MPD's rule: a client may use a file it could read itself), unless it lies in a directory
/// the daemon serves (the music directory). What is read comes from that same descriptor, so a
/// link that flips between the check and the read changes nothing. Blocking I/O: run it off the
/// event loop.
package enum ClientFile {
    package struct Refusal: Error {
        package enum Kind { case missing, denied, unreadable }
        package let kind: Kind
        package let message: String
    }

    /// Opens the regular file at `path` for `peer`; the caller closes the descriptor. `served`:
    /// a directory whose files any client may use (the music directory), or nil.
    package static func open(
        _ path: String, for peer: ClientPeer, sources: SourcePolicy,
        served: String?
    ) throws(Refusal) -> (fd: Int32, info: stat) {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        guard fd >= 0 else {
            let code = errno
            switch code {
            case ENOENT, ENOTDIR: throw Refusal(kind: .missing, message: "no such file: \(path)")
            case EACCES: throw Refusal(kind: .denied, message: "permission denied: \(path)")
            default: throw Refusal(kind: .unreadable, message: "cannot open \(path): \(String(cString: strerror(code)))")
            }
        }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            close(fd)
            throw Refusal(kind: .unreadable, message: "\(path) is not a regular file")
        }
        let opened = openedPath(fd) ?? path
        if let reason = sources.refusal(URL(fileURLWithPath: opened)) {
            close(fd)
            throw Refusal(kind: .denied, message: reason)
        }
        let isServed = served.map { opened.hasPrefix($0 == "/" ? "/" : $0 + "/") } ?? false
        guard isServed || peer.couldRead(owner: info.st_uid, mode: info.st_mode) else {
            close(fd)
            throw Refusal(kind: .denied, message: "permission denied: \(path) (a client may use only a file it could read itself)")
        }
        return (fd, info)
    }

    /// Up to `count` bytes of the file open on `fd`, from `offset` (fewer if it is shorter now).
    package static func read(_ fd: Int32, count wanted: Int, at offset: Int = 0) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: max(0, wanted))
        var count = 0
        while count < bytes.count {
            let result = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + count, $0.count - count, off_t(offset + count)) }
            if result < 0 && errno == EINTR { continue }
            guard result > 0 else { break }
            count += result
        }
        return count == bytes.count ? bytes : Array(bytes[..<count])
    }

    /// The path of the file `fd` is open on, as the kernel names it.
    private static func openedPath(_ fd: Int32) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/self/fd/\(fd)", &buffer, buffer.count - 1)
        guard length > 0 else { return nil }
        return String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
