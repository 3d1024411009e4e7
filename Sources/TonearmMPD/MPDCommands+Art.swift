import Foundation
import NIOCore
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
        MPDCommand("albumart", .read, 2...2, .later { call throws(MPDError) in
            let offset = try call.unsigned(1)
            let library = call.environment.library
            return try await library.perform { () throws(MPDError) in
                let song = try library.url(forURI: call[0])
                guard song.isFileURL, library.sources.refusal(song) == nil,
                      let cover = CoverFiles.find(in: song.deletingLastPathComponent().path) else {
                    throw MPDError(.noExist, "No file exists")
                }
                guard let (size, chunk) = readChunk(cover, at: offset, limit: call.binaryLimit) else {
                    throw MPDError(.noExist, "No file exists")
                }
                guard offset <= size else { throw .argument("Offset too large") }
                var r = MPDResponse()
                r.add("size", size)
                r.add(binary: chunk[...])
                return r.buffer
            }
        }),
        MPDCommand("readpicture", .read, 2...2, .later { call throws(MPDError) in
            let offset = try call.unsigned(1)
            let library = call.environment.library
            return try await library.perform { () throws(MPDError) in
                let song = try library.url(forURI: call[0])
                try library.checkSource(song)
                var info = stat()
                guard song.isFileURL, stat(song.path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
                    throw MPDError(.noExist, "No such song")
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

    /// The file's size and up to `limit` of its bytes from `offset` (none past the end); nil
    /// when it cannot be read.
    private static func readChunk(_ path: String, at offset: Int, limit: Int) -> (size: Int, bytes: [UInt8])? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return nil }
        let size = Int(info.st_size)
        var bytes = [UInt8](repeating: 0, count: max(0, min(limit, size - offset)))
        var count = 0
        while count < bytes.count {
            let result = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + count, $0.count - count, off_t(offset + count)) }
            if result < 0 && errno == EINTR { continue }
            guard result > 0 else { break }
            count += result
        }
        return (size, Array(bytes[..<count]))
    }
}
