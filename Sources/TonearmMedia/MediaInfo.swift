import Foundation

/// A network stream's title as it changes (ICY `StreamTitle`), split as stations send it,
/// "Artist - Title". Immutable and shared: made once by the decoder thread, carried by a chunk
/// to the output thread, which announces it when its first frame is heard.
public final class StreamTitle: Sendable, Equatable {
    public let title: String
    public let artist: String?

    public static func == (lhs: StreamTitle, rhs: StreamTitle) -> Bool { lhs.title == rhs.title && lhs.artist == rhs.artist }

    public init(streamTitle: String) {
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
public struct MediaInfo: Sendable, Equatable {
    public var url: String
    public var duration: Double?
    public var codec: String
    public var container: String
    public var sampleRate: Int
    public var channels: Int
    /// Bits per decoded sample when the codec says (lossless formats), else nil.
    public var bitsPerSample: Int?
    /// Bits per second of the encoded audio, when the file says (MPD's `bitrate`).
    public var bitRate: Int?
    public var title: String?
    public var artist: String?
    public var album: String?
    /// The format handed to the device.
    public var outputFormat: PCMFormat
    /// Loudness tags, when the file has them.
    public var replayGain: ReplayGainInfo?
    /// A network stream with no end and no seeking (internet radio).
    public var isLive = false

    public init(url: String, duration: Double?, codec: String, container: String, sampleRate: Int,
                channels: Int, bitsPerSample: Int?, title: String?, artist: String?, album: String?,
                outputFormat: PCMFormat, replayGain: ReplayGainInfo? = nil, bitRate: Int? = nil) {
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
public struct ReplayGainInfo: Sendable, Equatable {
    public var trackGain: Double?
    public var trackPeak: Double?
    public var albumGain: Double?
    public var albumPeak: Double?

    public init(trackGain: Double? = nil, trackPeak: Double? = nil, albumGain: Double? = nil, albumPeak: Double? = nil) {
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
        let info = ReplayGainInfo(trackGain: number("REPLAYGAIN_TRACK_GAIN") ?? r128("R128_TRACK_GAIN"),
                                  trackPeak: number("REPLAYGAIN_TRACK_PEAK"),
                                  albumGain: number("REPLAYGAIN_ALBUM_GAIN") ?? r128("R128_ALBUM_GAIN"),
                                  albumPeak: number("REPLAYGAIN_ALBUM_PEAK"))
        return info == ReplayGainInfo() ? nil : info
    }
}
