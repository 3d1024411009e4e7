import Foundation

/// What a queue listing shows of a file, and what ReplayGain's `auto` mode compares.
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
}
