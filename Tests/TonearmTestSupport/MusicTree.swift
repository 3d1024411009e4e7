import Foundation

/// A music directory made for a test: fixtures copied in with the tags asked for and no others
/// (FFmpeg rewrites the container's tags and copies the audio: milliseconds a file). A fixture
/// that is not media is copied as it is.
package struct MusicTree: Sendable {
    package struct Song: Sendable {
        package let path: String
        package let fixture: String
        package let tags: [String: String]

        package init(_ path: String, from fixture: String = "tone.flac", _ tags: [String: String] = [:]) {
            self.path = path
            self.fixture = fixture
            self.tags = tags
        }
    }

    package let root: String

    /// Makes `songs` under `root` (created if missing).
    package init(at root: String, _ songs: [Song]) throws {
        self.root = root
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        for song in songs { try add(song) }
    }

    package func add(_ song: Song) throws {
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

    package struct MusicTreeFailure: Error, CustomStringConvertible {
        package let description: String
        package init(description: String) { self.description = description }
    }
}
