import Foundation
import NIOCore
import TonearmFrontEnd
import TonearmLibrary
import TonearmMedia
import TonearmPlayer

#if canImport(Glibc)
    import Glibc
#endif

/// Cover art in chunks of at most `binarylimit` bytes, as MPD serves it: `albumart` sends the
/// cover file beside a song, `readpicture` the picture the song carries. A client asks again at
/// each offset until it has `size` bytes.
extension MPDCommands {
    static let artCommands: [MPDCommand] = [
        MPDCommand(
            "albumart", .read, 2...2,
            .later { call throws(MPDError) in
                let offset = try call.unsigned(1)
                if let cover = try await castCover(call, offset: offset) { return cover }
                let library = call.environment.library
                return try await library.perform { () throws(MPDError) in
                    let song = try library.url(forURI: call[0])
                    guard song.isFileURL, library.sources.refusal(song) == nil,
                        let cover = CoverFiles.find(in: song.deletingLastPathComponent().path)
                    else {
                        throw MPDError(.noExist, "No file exists")
                    }
                    // The image itself is checked as any file a client names: a link named cover.jpg
                    // must not hand out a file the client could not read.
                    let (fd, info): (Int32, stat)
                    do throws(ClientFile.Refusal) {
                        (fd, info) = try ClientFile.open(cover, for: call.peer, sources: library.sources, served: library.root)
                    } catch {
                        throw error.kind == .denied ? MPDError(.permission, error.message) : MPDError(.noExist, "No file exists")
                    }
                    defer { close(fd) }
                    let size = Int(info.st_size)
                    guard offset <= size else { throw .argument("Offset too large") }
                    let chunk = ClientFile.read(fd, count: min(call.binaryLimit, size - offset), at: offset)
                    var r = MPDResponse()
                    r.add("size", size)
                    r.add(binary: chunk[...])
                    return r.buffer
                }
            }),
        MPDCommand(
            "readpicture", .read, 2...2,
            .later { call throws(MPDError) in
                let offset = try call.unsigned(1)
                if let cover = try await castCover(call, offset: offset) { return cover }
                let library = call.environment.library
                return try await library.perform { () throws(MPDError) in
                    let song = try library.url(forURI: call[0])
                    guard song.isFileURL else { throw MPDError(.noExist, "No such song") }
                    // The song is checked as any file a client names (outside the music directory:
                    // only one it could read itself).
                    let info: stat
                    do throws(ClientFile.Refusal) {
                        let opened = try ClientFile.open(song.path, for: call.peer, sources: library.sources, served: library.root)
                        close(opened.fd)
                        info = opened.info
                    } catch {
                        throw error.kind == .denied ? MPDError(.permission, error.message) : MPDError(.noExist, "No such song")
                    }
                    var r = MPDResponse()
                    // A song without a picture: an empty reply, as MPD's.
                    guard let picture = library.picture(song, modified: Int(info.st_mtim.tv_sec), size: Int(info.st_size)) else {
                        return r.buffer
                    }
                    guard offset <= picture.bytes.count else { throw .argument("Bad file offset") }
                    r.add("size", picture.bytes.count)
                    if let type = picture.mimeType { r.add("type", type) }
                    r.add(binary: picture.bytes[offset..<min(picture.bytes.count, offset + call.binaryLimit)])
                    return r.buffer
                }
            }),
    ]

    /// A cast's item (its URL, as `currentsong` shows it) has the cover its control point names,
    /// fetched by the daemon, for `albumart` and `readpicture` alike; nil for any other song.
    private static func castCover(_ call: MPDCall, offset: Int) async throws(MPDError) -> ByteBuffer? {
        guard let url = URL(string: call[0]), url.scheme != nil, !url.isFileURL,
            let cover = await call.environment.player.castCover(for: url)
        else { return nil }
        guard case .found(let picture) = cover else { throw MPDError(.noExist, "No file exists") }
        guard offset <= picture.bytes.count else { throw .argument("Bad file offset") }
        var r = MPDResponse()
        r.add("size", picture.bytes.count)
        if let type = picture.mimeType { r.add("type", type) }
        r.add(binary: picture.bytes[offset..<min(picture.bytes.count, offset + call.binaryLimit)])
        return r.buffer
    }
}
