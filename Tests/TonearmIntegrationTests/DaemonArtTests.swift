import Foundation
import Testing
import TonearmTestSupport

extension DaemonTests {
    /// Cover art for MPD clients (`albumart`, `readpicture`, `binarylimit`), fetched by Debian's
    /// mpc from the daemon and from Debian's MPD on the same tree.
    @Suite("Daemon serves cover art as MPD does", .serialized, .realDaemon(minutes: 3))
    struct DaemonArtTests {
        static let songs: [MusicTree.Song] = [
            .init("Covered/01 First.flac", ["artist": "Alpha", "title": "First"]),
            .init("Plain/01 Bare.flac", ["artist": "Beta", "title": "Bare"]),
        ]

        /// Noise images (they do not compress, so each takes several chunks) made by FFmpeg:
        /// a cover file beside a song, and pictures embedded (copied as they are) in an MP3 and a FLAC.
        private static func addPictures(_ tree: MusicTree, _ scratch: TemporaryDirectory) throws {
            func image(_ name: String, _ size: String) throws -> String {
                let path = scratch.path(name)
                let made = try runTool(
                    "/usr/bin/ffmpeg",
                    [
                        "-v", "error", "-y", "-f", "lavfi", "-i", "nullsrc=s=\(size),geq=random(1)*255:128:128",
                        "-frames:v", "1", path,
                    ], timeout: 30)
                #expect(made.status == 0, "\(made.output)")
                return path
            }
            try FileManager.default.copyItem(atPath: try image("cover.jpg", "160x160"), toPath: tree.root + "/Covered/cover.jpg")
            try FileManager.default.createDirectory(atPath: tree.root + "/Pictured", withIntermediateDirectories: true)
            for (song, fixture, picture) in [
                ("Pictured/png.mp3", "tone.mp3", try image("embedded.png", "96x96")),
                ("Pictured/jpeg.flac", "tone.flac", try image("embedded.jpg", "120x120")),
            ] {
                let made = try runTool(
                    "/usr/bin/ffmpeg",
                    [
                        "-v", "error", "-y", "-i", Fixtures.path(fixture), "-i", picture, "-map", "0:a", "-map", "1",
                        "-c", "copy", "-disposition:v", "attached_pic", "-metadata", "title=\(song)", tree.root + "/" + song,
                    ], timeout: 30)
                #expect(made.status == 0, "\(made.output)")
            }
        }

        /// What mpc writes for `command uri` against `host`: the bytes, exactly.
        private static func fetch(_ command: String, _ uri: String, host: String, into directory: TemporaryDirectory) throws -> Data {
            let out = directory.path("fetched-\(UUID().uuidString)")
            let result = try runTool(
                "/bin/sh", ["-c", "/usr/bin/mpc \(command) \"$1\" > \"$2\"", "sh", uri, out],
                environment: ["MPD_HOST": host, "PATH": "/usr/bin:/bin"], timeout: 20)
            #expect(result.status == 0, "mpc \(command) \(uri): \(result.output)")
            return (try? Data(contentsOf: URL(fileURLWithPath: out))) ?? Data()
        }

        @Test func mpcFetchesTheSameBytesFromBoth() throws {
            let scratch = try TemporaryDirectory()
            defer { scratch.remove() }
            let directory = try TemporaryDirectory()
            defer { directory.remove() }
            let tree = try MusicTree(at: directory.path("music"), Self.songs)
            try Self.addPictures(tree, scratch)
            let peer = try DebianMPD(musicDirectory: tree.root)
            defer { peer.stop() }
            let daemon = try DaemonLibraryTests.start(tree.root, directory)
            try withExtendedLifetime(daemon) {
                let ours = try daemon.connectMPD()
                try DaemonLibraryTests.waitForScan(ours)

                let cover = try Data(contentsOf: URL(fileURLWithPath: tree.root + "/Covered/cover.jpg"))
                #expect(cover.count > 8192, "the cover takes more than one chunk")
                #expect(try Self.fetch("albumart", "Covered/01 First.flac", host: daemon.mpdSocketPath, into: scratch) == cover)
                #expect(try Self.fetch("albumart", "Covered/01 First.flac", host: peer.socket, into: scratch) == cover)
                let png = try Data(contentsOf: URL(fileURLWithPath: scratch.path("embedded.png")))
                let jpeg = try Data(contentsOf: URL(fileURLWithPath: scratch.path("embedded.jpg")))
                for (song, picture) in [("Pictured/png.mp3", png), ("Pictured/jpeg.flac", jpeg)] {
                    #expect(try Self.fetch("readpicture", song, host: daemon.mpdSocketPath, into: scratch) == picture, "\(song)")
                    #expect(try Self.fetch("readpicture", song, host: peer.socket, into: scratch) == picture, "\(song) from MPD")
                }

                // JSON-RPC's library.art: the same bytes, base64, with where they came from.
                let json = try daemon.connect()
                for (path, expected, type, source) in [
                    ("Covered/01 First.flac", cover, "image/jpeg", "file"),
                    ("Covered", cover, "image/jpeg", "file"),
                    ("Pictured/png.mp3", png, "image/png", "embedded"),
                    ("Pictured/jpeg.flac", jpeg, "image/jpeg", "embedded"),
                ] {
                    let art = try #require(json.call("library.art", ["uri": path]).result, "\(path)")
                    #expect(art["data"].flatMap { Data(base64Encoded: $0 as? String ?? "") } == expected, "\(path)")
                    #expect(art["type"] as? String == type && art["source"] as? String == source, "\(path): \(art)")
                    #expect(art["size"] as? Int == expected.count)
                }
                for path in ["Plain/01 Bare.flac", "Nowhere/x.flac"] {
                    let missing = try json.call("library.art", ["uri": path])
                    #expect(missing.errorData?["kind"] as? String == "not_found", "\(path): \(missing)")
                }

                // The answers without bytes, refusals included, are MPD's.
                let theirs = try peer.connect()
                for command in [
                    "albumart \"Plain/01 Bare.flac\" 0", "readpicture \"Plain/01 Bare.flac\" 0",
                    "readpicture \"Covered/01 First.flac\" 0", "readpicture nowhere.flac 0",
                    "albumart \"Covered/01 First.flac\" 99999999", "readpicture Pictured/png.mp3 99999999",
                    "albumart \"Covered/01 First.flac\" x", "binarylimit 63", "binarylimit 99999999",
                    "albumart \"Covered/01 First.flac\"", "binarylimit 64",
                ] {
                    let reply = try ours.command(command)
                    let expected = try theirs.command(command)
                    #expect(reply.lines == expected.lines && reply.end == expected.end, "\(command):\n\(reply)\nMPD:\n\(expected)")
                }
            }
        }
    }
}
