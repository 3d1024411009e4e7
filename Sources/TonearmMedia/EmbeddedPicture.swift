/// A picture a media file carries (ID3's APIC, a FLAC or Vorbis METADATA_BLOCK_PICTURE, MP4's
/// covr): the image file's bytes as stored, and its type when known.
package struct EmbeddedPicture: Sendable, Equatable {
    package let bytes: [UInt8]
    /// "image/jpeg", "image/png", …; nil when the image is of a kind this build does not name.
    package let mimeType: String?

    package init(bytes: [UInt8], mimeType: String?) {
        self.bytes = bytes
        self.mimeType = mimeType
    }
}
