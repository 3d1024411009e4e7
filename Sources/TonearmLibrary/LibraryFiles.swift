/// Which files the library keeps: what FFmpeg decodes that people keep music in, by name.
package enum LibraryFiles {
    /// File name endings kept as songs.
    package static let songSuffixes: [String] = [
        "aac", "ac3", "aif", "aifc", "aiff", "alac", "amr", "ape", "au", "caf", "dff", "dsf",
        "flac", "m4a", "m4b", "mka", "mkv", "mp2", "mp3", "mp4", "mpc", "oga", "ogg", "opus",
        "ra", "shn", "snd", "spx", "tak", "tta", "w64", "wav", "weba", "webm", "wma", "wv",
    ]
    private static let songSuffixSet = Set(songSuffixes)
    package static let playlistSuffixes: Set<String> = ["m3u", "m3u8", "pls"]

    package static func isSong(_ name: String) -> Bool { songSuffixSet.contains(suffix(name)) }
    package static func isPlaylist(_ name: String) -> Bool { playlistSuffixes.contains(suffix(name)) }

    private static func suffix(_ name: String) -> String {
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return "" }
        return name[name.index(after: dot)...].lowercased()
    }
}
