import CFFmpeg

/// The audio MIME types this FFmpeg decodes (what a UPnP renderer lists as its Sink protocol
/// info): each type is listed when a decoder for its usual codecs is built into libavcodec here.
package enum DecodableTypes {
    private static let byType: [(type: String, decoders: [String])] = [
        ("audio/mpeg", ["mp3float", "mp3"]), ("audio/mp3", ["mp3float", "mp3"]),
        ("audio/flac", ["flac"]), ("audio/x-flac", ["flac"]),
        ("audio/wav", ["pcm_s16le"]), ("audio/x-wav", ["pcm_s16le"]), ("audio/wave", ["pcm_s16le"]),
        ("audio/L16", ["pcm_s16be"]), ("audio/aiff", ["pcm_s16be"]), ("audio/x-aiff", ["pcm_s16be"]),
        ("audio/ogg", ["vorbis", "libvorbis"]), ("audio/x-ogg", ["vorbis", "libvorbis"]), ("audio/vorbis", ["vorbis"]),
        ("audio/opus", ["opus", "libopus"]),
        ("audio/mp4", ["aac"]), ("audio/x-m4a", ["aac"]), ("audio/aac", ["aac"]), ("audio/aacp", ["aac"]),
        ("audio/x-ms-wma", ["wmav2"]), ("audio/x-ape", ["ape"]), ("audio/x-wavpack", ["wavpack"]),
        ("audio/x-alac", ["alac"]), ("audio/x-dsf", ["dsd_lsbf"]), ("audio/webm", ["opus", "vorbis"]),
    ]

    package static func audio() -> [String] {
        byType.filter { entry in entry.decoders.contains { avcodec_find_decoder_by_name($0) != nil } }.map(\.type)
    }
}
