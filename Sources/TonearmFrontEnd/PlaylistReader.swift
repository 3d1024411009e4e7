import Foundation
import TonearmCore
#if canImport(Glibc)
import Glibc
#endif

/// Reads a playlist file a client names, for both protocols. What is checked is the file
/// actually opened, never a name checked earlier: the descriptor's own path (its link in
/// /proc/self/fd) against `input.roots`, and its owner and mode against the peer (MPD's rule: a
/// client may use a file it could read itself), unless it lies in a directory the daemon serves
/// (the music directory). The entries are read from that same descriptor, so a link that flips
/// between the check and the read changes nothing. Blocking I/O: run it off the event loop.
package enum PlaylistReader {
    /// Larger than any playlist: a bigger file is not read.
    package static let maximumSize = 16 << 20

    package struct Refusal: Error {
        package enum Kind { case missing, denied, unreadable }
        package let kind: Kind
        package let message: String
    }

    /// The entries of the playlist at `path` (`kind`), for `peer`. `served`: a directory whose
    /// files any client may use (the music directory), or nil.
    package static func entries(at path: String, kind: PlaylistFile.Kind, for peer: ClientPeer, sources: SourcePolicy,
                        served: String?) throws(Refusal) -> [PlaylistEntry] {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        guard fd >= 0 else {
            let code = errno
            switch code {
            case ENOENT, ENOTDIR: throw Refusal(kind: .missing, message: "no such playlist: \(path)")
            case EACCES: throw Refusal(kind: .denied, message: "permission denied: \(path)")
            default: throw Refusal(kind: .unreadable, message: "cannot open \(path): \(String(cString: strerror(code)))")
            }
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            throw Refusal(kind: .unreadable, message: "\(path) is not a regular file")
        }
        guard info.st_size <= maximumSize else { throw Refusal(kind: .unreadable, message: "\(path) is over \(maximumSize) bytes") }
        let opened = openedPath(fd) ?? path
        if let reason = sources.refusal(URL(fileURLWithPath: opened)) { throw Refusal(kind: .denied, message: reason) }
        let isServed = served.map { opened.hasPrefix($0 == "/" ? "/" : $0 + "/") } ?? false
        guard isServed || peer.couldRead(owner: info.st_uid, mode: info.st_mode) else {
            throw Refusal(kind: .denied, message: "permission denied: \(path) (a client may use only a file it could read itself)")
        }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        var count = 0
        while count < bytes.count {
            let result = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress! + count, $0.count - count) }
            if result < 0 && errno == EINTR { continue }
            guard result > 0 else { break }
            count += result
        }
        let text = String(decoding: bytes[..<count], as: UTF8.self)
        do throws(PlaylistError) {
            // Relative entries are read from where the client named the playlist.
            return try PlaylistFile.parse(text, kind: kind, directory: URL(fileURLWithPath: path).deletingLastPathComponent())
        } catch {
            throw Refusal(kind: .unreadable, message: "playlist \(path): \(error.message)")
        }
    }

    /// The path of the file `fd` is open on, as the kernel names it.
    private static func openedPath(_ fd: Int32) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/self/fd/\(fd)", &buffer, buffer.count - 1)
        guard length > 0 else { return nil }
        return String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
