import Foundation
import TonearmCore

#if canImport(Glibc)
    import Glibc
#endif

/// Reads a playlist file a client names, for both protocols, from the file `ClientFile` opened
/// for the client (see there for what is checked).
package enum PlaylistReader {
    /// Larger than any playlist: a bigger file is not read.
    package static let maximumSize = 16 << 20

    package typealias Refusal = ClientFile.Refusal

    /// The entries of the playlist at `path` (`kind`), for `peer`. `served`: a directory whose
    /// files any client may use (the music directory), or nil.
    package static func entries(
        at path: String, kind: PlaylistFile.Kind, for peer: ClientPeer, sources: SourcePolicy,
        served: String?
    ) throws(Refusal) -> [PlaylistEntry] {
        let (fd, info): (Int32, stat)
        do throws(Refusal) { (fd, info) = try ClientFile.open(path, for: peer, sources: sources, served: served) } catch {
            // Named as a playlist, the way clients read it.
            if error.kind == .missing { throw Refusal(kind: .missing, message: "no such playlist: \(path)") }
            throw error
        }
        defer { close(fd) }
        guard info.st_size <= maximumSize else { throw Refusal(kind: .unreadable, message: "\(path) is over \(maximumSize) bytes") }
        let text = String(decoding: ClientFile.read(fd, count: Int(info.st_size)), as: UTF8.self)
        do throws(PlaylistError) {
            // Relative entries are read from where the client named the playlist.
            return try PlaylistFile.parse(text, kind: kind, directory: URL(fileURLWithPath: path).deletingLastPathComponent())
        } catch {
            throw Refusal(kind: .unreadable, message: "playlist \(path): \(error.message)")
        }
    }
}
