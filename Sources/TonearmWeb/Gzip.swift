import CZlib

/// gzip (RFC 1952) of a few bytes in memory, at zlib's best compression: the page's copies for
/// browsers that accept gzip. zlib rather than a hand-written deflate: it is what every peer
/// uses, and Debian has it everywhere.
enum Gzip {
    /// nil if zlib could not (out of memory): the file is then served as it is.
    static func compress(_ bytes: [UInt8]) -> [UInt8]? {
        var stream = z_stream()
        guard tonearm_gzip_init(&stream) == Z_OK else { return nil }
        defer { deflateEnd(&stream) }
        var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, uLong(bytes.count))))
        let result = bytes.withUnsafeBufferPointer { input in
            output.withUnsafeMutableBufferPointer { out in
                stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress)
                stream.avail_in = uInt(input.count)
                stream.next_out = out.baseAddress
                stream.avail_out = uInt(out.count)
                return deflate(&stream, Z_FINISH)
            }
        }
        guard result == Z_STREAM_END else { return nil }
        output.removeLast(Int(stream.avail_out))
        return output
    }
}
