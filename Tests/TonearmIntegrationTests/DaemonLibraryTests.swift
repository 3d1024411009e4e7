import Foundation
import Testing
import TonearmTestSupport

extension DaemonTests {
    /// The library as MPD clients see it, held to Debian's MPD 0.23 scanning the same tree.
    @Suite("Daemon keeps a music library MPD clients browse", .serialized, .timeLimit(.minutes(3)))
    struct DaemonLibraryTests {
        /// Formats whose decoders report the same format and length in MPD and in FFmpeg (MPD's
        /// own MP3 and Opus decoders say other bits per sample), with Unicode names, nesting, an
        /// untagged file and one that is not media.
        static let songs: [MusicTree.Song] = [
            .init("Alpha/One/01 First.flac", ["artist": "Alpha", "album": "One", "title": "First", "track": "1",
                                               "date": "2001", "genre": "Rock"]),
            .init("Alpha/One/02 Second.flac", ["artist": "Alpha", "album": "One", "title": "Second", "track": "2",
                                                "date": "2001", "genre": "Rock"]),
            .init("Alpha/Two/01 Third.ogg", from: "tone.ogg", ["artist": "Alpha", "album": "Two", "title": "Third"]),
            .init("Béta/Zwölf/01 Café.flac", ["artist": "Béta", "album": "Zwölf", "title": "Café", "albumartist": "Various"]),
            .init("Béta/Zwölf/02 Naïve.flac", ["artist": "Gamma", "album": "Zwölf", "title": "Naïve", "albumartist": "Various"]),
            .init("loose.wav", from: "tone.wav"),
            .init("zz/notmedia.mp3", from: "notmedia.mp3"),
        ]

        /// A reply's lines without the ones the two decoders may say differently for other
        /// formats; none here, but `Format` is compared only where both read the same decoder
        /// output (FLAC, WAV: 16 bits; Vorbis: float).
        static func comparable(_ reply: MPDTestClient.Reply) -> [String] { reply.lines }

        /// Waits until the daemon's scans are done (`updating_db` gone: the scan at start is
        /// queued before the sockets are bound) and the database has songs.
        static func waitForScan(_ client: MPDTestClient) throws {
            let deadline = Date().addingTimeInterval(20 * Sanitizer.timeScale)
            while true {
                let status = try client.command("status")
                let stats = try client.command("stats")
                if status["updating_db"] == nil, (Int(stats["songs"] ?? "0") ?? 0) > 0 { return }
                guard Date() < deadline else { throw LineClient.Failure(description: "the scan did not end: \(status) \(stats)") }
                usleep(20_000)
            }
        }

        private func start(_ music: String, _ directory: TemporaryDirectory) throws -> DaemonProcess {
            let config = directory.path("tonearmd.toml")
            try "[library]\nmusic_directory = \"\(music)\"\n".write(toFile: config, atomically: true, encoding: .utf8)
            return try DaemonProcess(arguments: ["--device", "null", "--config", config])
        }

        @Test func listingsAndCountsAreMPDs() throws {
            let directory = try TemporaryDirectory()
            defer { directory.remove() }
            let tree = try MusicTree(at: directory.path("music"), Self.songs)
            let peer = try DebianMPD(musicDirectory: tree.root)
            defer { peer.stop() }
            let daemon = try start(tree.root, directory)
            try withExtendedLifetime(daemon) {
                let ours = try daemon.connectMPD()
                try Self.waitForScan(ours)
                let theirs = try peer.connect()

                let stats = try ours.command("stats"), peerStats = try theirs.command("stats")
                for key in ["artists", "albums", "songs", "db_playtime"] {
                    #expect(stats[key] == peerStats[key], "stats \(key): \(stats) against \(peerStats)")
                }
                #expect((Int(stats["db_update"] ?? "0") ?? 0) > 0)
                for command in ["lsinfo", "lsinfo Alpha", "lsinfo \"Béta/Zwölf\"", "lsinfo \"Alpha/One/01 First.flac\"",
                                "listall", "listall Alpha", "listallinfo", "listallinfo \"Béta\""] {
                    let reply = try ours.command(command), expected = try theirs.command(command)
                    #expect(reply.lines == expected.lines, "\(command):\n\(reply)\nMPD:\n\(expected)")
                }
                let missing = try ours.command("lsinfo nowhere"), peerMissing = try theirs.command("lsinfo nowhere")
                #expect(missing.ack == peerMissing.ack, "\(missing) against \(peerMissing)")
            }
        }

        /// mpc's `update --wait`, and what `idle` says of a scan: `update` when it starts and ends,
        /// `database` when it changed something.
        @Test func mpcUpdatesAndIdleHearsIt() throws {
            let directory = try TemporaryDirectory()
            defer { directory.remove() }
            let tree = try MusicTree(at: directory.path("music"), Array(Self.songs.prefix(2)))
            let daemon = try start(tree.root, directory)
            try withExtendedLifetime(daemon) {
                let client = try daemon.connectMPD()
                try Self.waitForScan(client)
                #expect(try client.command("stats")["songs"] == "2")

                try tree.add(.init("Delta/new.flac", ["artist": "Delta", "title": "New"]))
                let idler = try daemon.connectMPD()
                try idler.connection.send(line: "idle database")
                let updated = try mpc(["update", "--wait"], host: daemon.mpdSocketPath, timeout: 30 * Sanitizer.timeScale)
                #expect(updated.status == 0, "\(updated.output)")
                #expect(try idler.reply(timeout: 10 * Sanitizer.timeScale).lines == ["changed: database"])
                #expect(try client.command("stats")["songs"] == "3")
                let listed = try mpc(["ls", "Delta"], host: daemon.mpdSocketPath)
                #expect(listed.output == "Delta/new.flac\n", "\(listed.output)")

                // Nothing changed: `update` is heard, `database` is not.
                try idler.connection.send(line: "idle database update")
                #expect(try client.command("update").ok)
                #expect(try idler.reply(timeout: 10 * Sanitizer.timeScale).lines == ["changed: update"])
            }
        }
    }
}
