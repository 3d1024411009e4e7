import Foundation

/// A network stream's title as it changes (ICY `StreamTitle`), split as stations send it,
/// "Artist - Title". Immutable and shared: made once by the decoder thread, carried by a chunk
/// to the output thread, which announces it when its first frame is heard.
package final class StreamTitle: Sendable, Equatable {
    package let title: String
    package let artist: String?

    package static func == (lhs: StreamTitle, rhs: StreamTitle) -> Bool { lhs.title == rhs.title && lhs.artist == rhs.artist }

    package init(streamTitle: String) {
        if let dash = streamTitle.range(of: " - ") {
            artist = String(streamTitle[..<dash.lowerBound]).trimmingCharacters(in: .whitespaces)
            title = String(streamTitle[dash.upperBound...]).trimmingCharacters(in: .whitespaces)
        } else {
            artist = nil
            title = streamTitle.trimmingCharacters(in: .whitespaces)
        }
    }
}

/// What a loaded item is: read once by the decoder thread when the file opens.
package struct MediaInfo: Sendable, Equatable {
    package var url: String
    package var duration: Double?
    package var codec: String
    package var container: String
    package var sampleRate: Int
    package var channels: Int
    /// Bits per decoded sample when the codec says (lossless formats), else nil.
    package var bitsPerSample: Int?
    /// Bits per second of the encoded audio, when the file says (MPD's `bitrate`).
    package var bitRate: Int?
    package var title: String?
    package var artist: String?
    package var album: String?
    /// The format handed to the device.
    package var outputFormat: PCMFormat
    /// Loudness tags, when the file has them.
    package var replayGain: ReplayGainInfo?
    /// A network stream with no end and no seeking (internet radio).
    package var isLive = false

    package init(
        url: String, duration: Double?, codec: String, container: String, sampleRate: Int,
        channels: Int, bitsPerSample: Int?, title: String?, artist: String?, album: String?,
        outputFormat: PCMFormat, replayGain: ReplayGainInfo? = nil, bitRate: Int? = nil
    ) {
        self.bitRate = bitRate
        self.url = url
        self.duration = duration
        self.codec = codec
        self.container = container
        self.sampleRate = sampleRate
        self.channels = channels
        self.bitsPerSample = bitsPerSample
        self.title = title
        self.artist = artist
        self.album = album
        self.outputFormat = outputFormat
        self.replayGain = replayGain
    }
}

/// ReplayGain values from a file's tags (`REPLAYGAIN_TRACK_GAIN` and friends, or Opus's R128
/// tags converted to ReplayGain's −18 LUFS reference). Gains in dB, peaks as linear amplitude.
package struct ReplayGainInfo: Sendable, Equatable {
    package var trackGain: Double?
    package var trackPeak: Double?
    package var albumGain: Double?
    package var albumPeak: Double?

    package init(trackGain: Double? = nil, trackPeak: Double? = nil, albumGain: Double? = nil, albumPeak: Double? = nil) {
        self.trackGain = trackGain
        self.trackPeak = trackPeak
        self.albumGain = albumGain
        self.albumPeak = albumPeak
    }

    /// Reads the tags through `tag` (a case-insensitive lookup); nil when there are none.
    package static func read(_ tag: (String) -> String?) -> ReplayGainInfo? {
        func number(_ key: String) -> Double? {
            guard let text = tag(key) else { return nil }
            // "-6.48 dB", "0.988553", "+1.2 dB": the number is the first word.
            let word = text.trimmingCharacters(in: .whitespaces).split(separator: " ").first.map(String.init) ?? ""
            guard let value = Double(word), value.isFinite else { return nil }
            return value
        }
        // R128 gains are Q7.8 fixed point relative to −23 LUFS; ReplayGain's reference is 5 dB louder.
        func r128(_ key: String) -> Double? {
            guard let text = tag(key), let value = Int(text.trimmingCharacters(in: .whitespaces)) else { return nil }
            return Double(value) / 256 + 5
        }
        let info = ReplayGainInfo(
            trackGain: number("REPLAYGAIN_TRACK_GAIN") ?? r128("R128_TRACK_GAIN"),
            trackPeak: number("REPLAYGAIN_TRACK_PEAK"),
            albumGain: number("REPLAYGAIN_ALBUM_GAIN") ?? r128("R128_ALBUM_GAIN"),
            albumPeak: number("REPLAYGAIN_ALBUM_PEAK"))
        return info == ReplayGainInfo() ? nil : info
    }
}
