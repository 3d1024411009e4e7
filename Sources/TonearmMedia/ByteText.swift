/// A `String` as a key told apart and hashed by its UTF-8 bytes, as SQLite, MPD and the file
/// system tell names apart. `String`'s own `==` calls canonically equivalent texts equal ("é"
/// and "e" with a combining accent) and hashes through Unicode normalization, which costs more
/// than the bytes' comparison; and comparing two `utf8` views element by element walks indices.
package struct ByteText: Hashable, Sendable {
    package let text: String

    package init(_ text: String) { self.text = text }

    package static func == (a: ByteText, b: ByteText) -> Bool { a.text.hasSameBytes(as: b.text) }

    package func hash(into hasher: inout Hasher) {
        var text = text
        text.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }
}

extension String {
    /// Whether both texts are the same bytes (a native string's bytes are compared in place).
    package func hasSameBytes(as other: String) -> Bool {
        guard utf8.count == other.utf8.count else { return false }
        let compared = utf8.withContiguousStorageIfAvailable { mine in
            other.utf8.withContiguousStorageIfAvailable { theirs in mine.elementsEqual(theirs) }
        }
        return (compared ?? nil) ?? utf8.elementsEqual(other.utf8)
    }
}
