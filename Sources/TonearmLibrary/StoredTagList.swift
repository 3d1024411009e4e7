import TonearmMedia

/// A song's tags in one value (`song.tags`), in the file's order: for each, its code
/// (`StoredTag`, one byte), its value's length (LEB128) and the value's bytes. Listings read a
/// song's tags from it in the one row they read of the song, where the tag table held nine rows a
/// song to step through; the tag table stays for searches and its indexes.
enum StoredTagList {
    static func encode(_ entries: [MediaTags.Entry]) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(entries.reduce(0) { $0 + $1.value.utf8.count + 2 })
        for entry in entries {
            guard let code = StoredTag.code(entry.tag) else { continue }
            bytes.append(UInt8(code))
            var length = entry.value.utf8.count
            while length >= 0x80 {
                bytes.append(UInt8(length & 0x7F) | 0x80)
                length >>= 7
            }
            bytes.append(UInt8(length))
            bytes.append(contentsOf: entry.value.utf8)
        }
        return bytes
    }

    /// Each tag and value of `bytes`, in order; a tag this build does not know is skipped, and a
    /// value cut short (damage) ends the list.
    static func forEach(in bytes: UnsafeRawBufferPointer, _ body: (MediaTag, UnsafeRawBufferPointer) throws -> Void) rethrows {
        var at = 0
        while at < bytes.count {
            let code = Int(bytes[at])
            at += 1
            var length = 0
            var shift = 0
            var ended = false
            while !ended, at < bytes.count, shift < 35 {
                let byte = bytes[at]
                at += 1
                length |= Int(byte & 0x7F) << shift
                shift += 7
                ended = byte & 0x80 == 0
            }
            guard ended, length <= bytes.count - at else { return }
            if let tag = StoredTag.tag(code) { try body(tag, UnsafeRawBufferPointer(rebasing: bytes[at..<at + length])) }
            at += length
        }
    }
}
