import Foundation

/// A music directory made for a test: fixtures copied in with the tags asked for and no others
/// (FFmpeg rewrites the container's tags and copies the audio: milliseconds a file). A fixture
/// that is not media is copied as it is.
public struct MusicTree: Sendable {
    public struct Song: Sendable {
        public let path: String
        public let fixture: String
        public let tags: [String: String]

        public init(_ path: String, from fixture: String = "tone.flac", _ tags: [String: String] = [:]) {
            self.path = path
            self.fixture = fixture
            self.tags = tags
        }
    }

    public let root: String

    /// Makes `songs` under `root` (created if missing).
    public init(at root: String, _ songs: [Song]) throws {
        self.root = root
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        for song in songs { try add(song) }
    }

    public func add(_ song: Song) throws {
        let target = root + "/" + song.path
        try FileManager.default.createDirectory(
            atPath: (target as NSString).deletingLastPathComponent,
            withIntermediateDirectories: true)
        // The fixture's own tags (global and the stream's, where Ogg keeps them) are dropped.
        var arguments = ["-v", "error", "-y", "-i", Fixtures.path(song.fixture), "-map_metadata", "-1", "-map_metadata:s:a", "-1"]
        for (key, value) in song.tags.sorted(by: { $0.key < $1.key }) { arguments += ["-metadata", "\(key)=\(value)"] }
        arguments += ["-c", "copy", target]
        let result = try runTool("/usr/bin/ffmpeg", arguments, timeout: 30)
        guard result.status == 0 else {
            try? FileManager.default.removeItem(atPath: target)
            try FileManager.default.copyItem(atPath: Fixtures.path(song.fixture), toPath: target)
            return
        }
    }

    public struct MusicTreeFailure: Error, CustomStringConvertible {
        public let description: String
        public init(description: String) { self.description = description }
    }
}
