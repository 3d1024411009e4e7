import Foundation

/// What a listing shows of a file (every `MediaTag` it carries, with all its values), its
/// length, and the ReplayGain values `auto` mode compares.
package struct MediaTags: Sendable, Equatable {
    package struct Entry: Sendable, Equatable {
        package let tag: MediaTag
        package let value: String

        /// A line break inside `value` becomes a space: every value is one line in a listing,
        /// where a break would end the protocol's line early.
        package init(_ tag: MediaTag, _ value: String) {
            self.tag = tag
            self.value =
                value.utf8.contains(where: { $0 == 0x0A || $0 == 0x0D })
                ? value.split(whereSeparator: \.isNewline).joined(separator: " ") : value
        }
    }

    /// Every tag value, in the order the file has them: MPD prints a song's tags in that order
    /// (Debian's MPD 0.23, checked beside it), and a listing writes them as they stand.
    package private(set) var entries: [Entry]
    package var duration: Double?
    package var replayGain: ReplayGainInfo?
    /// The audio as MPD shows a song's `Format:` ("44100:16:2"), when the file was read.
    package var audioFormat: String?
    /// The file's modification time when it was read (seconds since 1970), MPD's `Last-Modified`.
    package var modified: Int?

    package init(entries: [Entry] = [], duration: Double? = nil, replayGain: ReplayGainInfo? = nil) {
        self.entries = entries
        self.duration = duration
        self.replayGain = replayGain
    }

    package init(
        title: String?, artist: String?, album: String?, duration: Double? = nil,
        replayGain: ReplayGainInfo? = nil
    ) {
        let given: [(MediaTag, String?)] = [(.title, title), (.artist, artist), (.album, album)]
        self.init(
            entries: given.compactMap { tag, value in value.map { Entry(tag, $0) } }, duration: duration,
            replayGain: replayGain)
    }

    /// The tag's first value.
    package subscript(tag: MediaTag) -> String? { entries.first { $0.tag == tag }?.value }

    package func values(_ tag: MediaTag) -> [String] { entries.filter { $0.tag == tag }.map(\.value) }

    package var title: String? { self[.title] }
    package var artist: String? { self[.artist] }
    package var album: String? { self[.album] }

    /// Collects a file's metadata, dictionary by dictionary (the container's, then the audio
    /// stream's): keys that name no song tag are left out, a tag a former dictionary gave is not
    /// taken again from a later one (a FLAC in Matroska repeats its tags), and a value the same
    /// tag already has is not repeated (ID3's TSOP beside a TXXX ARTISTSORT). `fromID3`: the keys
    /// are FFmpeg's names for ID3v2 frames, where `performer` is TPE3, the conductor.
    package static func collect(_ dictionaries: [[(key: String, value: String)]], fromID3: Bool = false) -> [Entry] {
        var entries: [Entry] = []
        for dictionary in dictionaries {
            let given = Set(entries.map(\.tag))
            for (key, value) in dictionary {
                guard var tag = MediaTag.tag(forMetadataKey: key), !given.contains(tag) else { continue }
                if fromID3 && tag == .performer { tag = .conductor }
                var text = value.trimmingCharacters(in: .whitespacesAndNewlines)
                // "3/12": the number, as MPD shows it; the total is no part of the tag.
                if tag == .track || tag == .disc, let slash = text.firstIndex(of: "/") {
                    text = String(text[..<slash]).trimmingCharacters(in: .whitespaces)
                }
                let entry = Entry(tag, text)
                if !text.isEmpty && !entries.contains(entry) { entries.append(entry) }
            }
        }
        return entries
    }
}
