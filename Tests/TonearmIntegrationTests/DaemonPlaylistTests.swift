import Foundation
import Testing
import TonearmTestSupport

extension DaemonTests {
    /// Stored playlists as MPD clients keep them, held to Debian's MPD 0.23 on the same tree.
    @Suite("Daemon keeps MPD's stored playlists", .serialized, .realDaemon(minutes: 3))
    struct DaemonPlaylistTests {
        /// A reply's lines without `Last-Modified` (the two servers write their files a moment
        /// apart) and queue ids (MPD's first is 1, Tonearm's 0; see docs/mpd.md).
        private static func comparable(_ reply: MPDTestClient.Reply) -> [String] {
            reply.lines.filter { !$0.hasPrefix("Last-Modified: ") && !$0.hasPrefix("Id: ") } + [
                reply.end.replacingOccurrences(of: "ACK [", with: "ACK[")
            ]
        }

        /// Every editing command, its refusals included, answered and leaving the lists as MPD's.
        @Test func editingAnswersAsMPDDoes() throws {
            try DaemonLibraryTests.beside { ours, theirs in
                let script = [
                    "add Alpha", "save mix", "save mix", "save \"a/b\"", "save \"\"", "listplaylists", "listplaylist mix",
                    "listplaylistinfo mix", "rm nope", "rename mix tape", "rename tape tape", "rename nope other",
                    "rename tape \"x/y\"", "playlistadd tape \"Béta/Zwölf/01 Café.flac\"", "playlistadd tape nowhere.flac",
                    "playlistadd tape Béta", "playlistadd tape loose.wav 0", "playlistadd tape loose.wav 99",
                    "playlistadd tape http://127.0.0.1:9/stream.mp3", "listplaylist tape",
                    "playlistdelete tape 99", "playlistdelete tape 1", "playlistdelete tape 2:4", "playlistdelete tape 3:1",
                    "playlistmove tape 0 2", "playlistmove tape 9 0", "playlistmove tape 0:2 1", "listplaylist tape",
                    "listplaylistinfo tape", "playlistclear nope", "playlistclear tape", "listplaylist tape",
                    "searchaddpl found \"(artist == \\\"Alpha\\\")\"", "searchaddpl found title Café", "searchaddpl found bogus x",
                    "listplaylist found", "clear", "load found", "playlistinfo", "load found 1:2", "playlistinfo",
                    "listplaylists", "rm tape", "rm tape", "listplaylists", "listplaylist nope", "load nope",
                ]
                for command in script {
                    let reply = try ours.command(command)
                    let expected = try theirs.command(command)
                    // MPD lists its playlists in the directory's order, Tonearm by name.
                    let (mine, peers) =
                        command == "listplaylists"
                        ? (Self.comparable(reply).sorted(), Self.comparable(expected).sorted())
                        : (Self.comparable(reply), Self.comparable(expected))
                    #expect(mine == peers, "\(command):\n\(reply)\nMPD:\n\(expected)")
                }
            }
        }

        /// A change is announced to idle clients; the playlists outlive a restart; the music
        /// directory's own .m3u files are listed and loaded, and refused for writing.
        /// JSON-RPC's `playlist.*` keep the same store: what one protocol saves, the other lists
        /// and loads, and each refusal says why.
        @Test func jsonRPCSavesListsLoadsAndDeletesTheSamePlaylists() throws {
            try DaemonLibraryTests.scanned { daemon, _, _ in
                let client = try daemon.connect()
                let mpd = try daemon.connectMPD()
                _ = try client.call("add", ["urls": ["Alpha/One/01 First.flac", "loose.wav", Fixtures.path("tone.flac")]])
                let saved = try #require(client.call("playlist.save", ["name": "evening"]).result)
                #expect(saved["entries"] as? Int == 3)
                #expect(
                    try mpd.command("listplaylist evening").values("file") == [
                        "Alpha/One/01 First.flac", "loose.wav", Fixtures.path("tone.flac"),
                    ])
                let exists = try client.call("playlist.save", ["name": "evening"])
                #expect(exists.errorData?["kind"] as? String == "exists", "\(exists)")
                _ = try client.call("remove", ["ids": [2]])
                #expect(try client.call("playlist.save", ["name": "evening", "replace": true]).result?["entries"] as? Int == 2)

                // An entry this daemon may not play (another program wrote it there) is left out.
                let file = try #require(FileHandle(forWritingAtPath: daemon.directory.path("state") + "/playlists/evening.m3u"))
                file.seekToEndOfFile()
                file.write(Data("gopher://host/x.flac\n".utf8))
                try file.close()
                _ = try client.call("clear")
                let loaded = try #require(client.call("playlist.load", ["name": "evening", "play": true]).result)
                #expect((loaded["items"] as? [Any])?.count == 2 && loaded["skipped"] as? Int == 1, "\(loaded)")
                #expect((loaded["state"] as? [String: Any])?["state"] as? String == "playing", "\(loaded)")
                let titles = try #require(client.call("queue").result?["items"] as? [[String: Any]]).map { $0["title"] as? String }
                #expect(titles.first == "First", "the library's tags come with the songs: \(titles)")

                let listed = try #require(client.call("playlist.list").result?["playlists"] as? [[String: Any]])
                #expect(listed.compactMap { $0["name"] as? String } == ["evening"], "\(listed)")
                #expect(try client.call("playlist.load", ["name": "nothing"]).errorData?["kind"] as? String == "not_found")
                #expect(try client.call("playlist.save", ["name": "a/b"]).errorCode == -32602)
                #expect(try client.call("playlist.delete", ["name": "evening"]).result != nil)
                #expect(try mpd.command("listplaylists").values("playlist").isEmpty)
                #expect(try client.call("playlist.delete", ["name": "evening"]).errorData?["kind"] as? String == "not_found")
            }
        }

        @Test func changesAreAnnouncedKeptAndTheMusicDirectorysFilesReadOnly() throws {
            let directory = try TemporaryDirectory()
            defer { directory.remove() }
            let tree = try MusicTree(at: directory.path("music"), DaemonLibraryTests.songs)
            try "Alpha/One/01 First.flac\nloose.wav\n".write(toFile: tree.root + "/mixtape.m3u", atomically: true, encoding: .utf8)
            let config = directory.path("tonearmd.toml")
            try "[library]\nmusic_directory = \"\(tree.root)\"\n".write(toFile: config, atomically: true, encoding: .utf8)
            let arguments = ["--device", "null", "--config", config]
            let environment = ["STATE_DIRECTORY": directory.path("state")]
            var daemon = try DaemonProcess(arguments: arguments, environment: environment)
            var client = try daemon.connectMPD()
            try DaemonLibraryTests.waitForScan(client)

            let watcher = try daemon.connectMPD()
            try watcher.connection.send(line: "idle stored_playlist")
            #expect(try client.command("playlistadd keep \"Alpha/Two/01 Third.ogg\"").ok)
            let news = try watcher.reply()
            #expect(news.values("changed") == ["stored_playlist"], "\(news)")

            let listed = try client.command("listplaylists").values("playlist")
            #expect(listed == ["keep", "mixtape"], "\(listed)")
            #expect(try client.command("listplaylist mixtape").values("file") == ["Alpha/One/01 First.flac", "loose.wav"])
            for command in ["rm mixtape", "playlistadd mixtape loose.wav", "rename keep mixtape", "playlistclear mixtape"] {
                let refused = try client.command(command)
                #expect(refused.ack?.contains("read-only") == true, "\(command): \(refused)")
            }
            #expect(try client.command("load mixtape").ok)
            #expect(try client.command("playlistinfo").values("file") == ["Alpha/One/01 First.flac", "loose.wav"])

            #expect(daemon.terminate() == 0)
            daemon = try DaemonProcess(arguments: arguments, environment: environment)
            client = try daemon.connectMPD()
            #expect(try client.command("listplaylist keep").values("file") == ["Alpha/Two/01 Third.ogg"])
            #expect(daemon.terminate() == 0)
        }
    }
}
