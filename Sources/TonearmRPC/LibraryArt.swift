import Foundation
import TonearmFrontEnd
import TonearmLibrary
import TonearmPlayer
import TonearmProtocol

/// Covers for clients that ask by a path in the music directory: JSON-RPC's `library.art` and
/// the web remote's `/art`.
package enum LibraryArt {
    /// The cover of a song (or of a directory's songs): the cover file beside it, else the
    /// picture the song carries; nil when there is neither. Each file is opened as any file a
    /// client names (`ClientFile`). Blocking I/O.
    package static func find(_ path: String, root: String, sources: SourcePolicy, for peer: ClientPeer) throws
        -> (bytes: [UInt8], type: String?, source: String)?
    {
        let target = path.isEmpty ? root : root + "/" + path
        var info = stat()
        guard stat(target, &info) == 0 else {
            throw RPC.Failure(.rejected, "no such directory or song in the music directory: '\(path)'", data: ["kind": "not_found"])
        }
        let isDirectory = info.st_mode & S_IFMT == S_IFDIR
        let directory = isDirectory ? target : (target as NSString).deletingLastPathComponent
        if let cover = CoverFiles.find(in: directory), let bytes = try read(cover, root: root, sources: sources, for: peer) {
            return (bytes, mimeType(cover), "file")
        }
        guard !isDirectory, try read(target, root: root, sources: sources, for: peer, checkOnly: true) != nil,
            let picture = Player.readPicture(URL(fileURLWithPath: target))
        else { return nil }
        return (picture.bytes, picture.mimeType, "embedded")
    }

    /// Larger than any cover: a bigger file is not sent.
    static let maximumArtBytes = 16 << 20

    /// The bytes of `path` as a client may have them (`checkOnly`: none, the check alone); nil
    /// when it is not there; a refusal when the client may not.
    private static func read(
        _ path: String, root: String, sources: SourcePolicy, for peer: ClientPeer,
        checkOnly: Bool = false
    ) throws -> [UInt8]? {
        let (fd, info): (Int32, stat)
        do throws(ClientFile.Refusal) { (fd, info) = try ClientFile.open(path, for: peer, sources: sources, served: root) } catch {
            if error.kind == .missing { return nil }
            throw RPC.Failure(.rejected, error.message, data: ["kind": error.kind == .denied ? "permission_denied" : "unreadable"])
        }
        defer { close(fd) }
        if checkOnly { return [] }
        guard info.st_size <= maximumArtBytes else {
            throw RPC.Failure(.rejected, "\(path) is over \(maximumArtBytes) bytes", data: ["kind": "unreadable"])
        }
        return ClientFile.read(fd, count: Int(info.st_size))
    }

    private static func mimeType(_ path: String) -> String? {
        switch (path as NSString).pathExtension.lowercased() {
        case "jpg", "jpeg": "image/jpeg"
        case "png": "image/png"
        case "webp": "image/webp"
        case "gif": "image/gif"
        case "bmp": "image/bmp"
        case "tiff": "image/tiff"
        default: nil
        }
    }
}
