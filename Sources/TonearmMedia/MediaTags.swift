import Foundation

/// What a queue listing shows of a file, and what ReplayGain's `auto` mode compares: read by
/// opening the file as the decoder does (one code path for probing), then closing it.
public struct MediaTags: Sendable, Equatable {
    public var title: String?
    public var artist: String?
    public var album: String?
    public var duration: Double?
    public var replayGain: ReplayGainInfo?

    public init(title: String? = nil, artist: String? = nil, album: String? = nil, duration: Double? = nil,
                replayGain: ReplayGainInfo? = nil) {
        self.title = title
        self.artist = artist
        self.album = album
        self.duration = duration
        self.replayGain = replayGain
    }

    /// Reads a local file's tags; nil when it cannot be opened as media. Blocks on file I/O:
    /// call it from a thread of its own, never the event loop or the cooperative pool.
    public static func read(_ url: URL) -> MediaTags? {
        guard url.isFileURL, let decoder = try? MediaDecoder(url: url, cancellation: CancellationFlag()) else {
            return nil
        }
        let info = decoder.info
        return MediaTags(title: info.title, artist: info.artist, album: info.album, duration: info.duration,
                         replayGain: info.replayGain)
    }
}
