import Foundation
import Testing
import TonearmTestSupport

extension DaemonTests {
    /// The library as MPD clients see it, held to Debian's MPD 0.23 scanning the same tree.
    @Suite("Daemon keeps a music library MPD clients browse", .serialized, .realDaemon(minutes: 3))
    struct DaemonLibraryTests {
        /// Formats whose decoders report the same format and length in MPD and in FFmpeg (MPD's
        /// own MP3 and Opus decoders say other bits per sample), with Unicode names, nesting, an
        /// untagged file and one that is not media.
        static let songs: [MusicTree.Song] = [
            .init(
                "Alpha/One/01 First.flac",
                [
                    "artist": "Alpha", "album": "One", "title": "First", "track": "1",
                    "date": "2001", "genre": "Rock",
                ]),
            .init(
                "Alpha/One/02 Second.flac",
                [
                    "artist": "Alpha", "album": "One", "title": "Second", "track": "2",
                    "date": "2001", "genre": "Rock",
                ]),
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

        static func start(_ music: String, _ directory: TemporaryDirectory) throws -> DaemonProcess {
            let config = directory.path("tonearmd.toml")
            try "[library]\nmusic_directory = \"\(music)\"\n".write(toFile: config, atomically: true, encoding: .utf8)
            return try DaemonProcess(arguments: ["--device", "null", "--config", config])
        }

        /// The daemon on a tree of `songs`, its first scan done.
        static func scanned(_ body: (_ daemon: DaemonProcess, _ tree: MusicTree, _ directory: TemporaryDirectory) throws -> Void) throws {
            let directory = try TemporaryDirectory()
            defer { directory.remove() }
            let tree = try MusicTree(at: directory.path("music"), songs)
            let daemon = try Self.start(tree.root, directory)
            try withExtendedLifetime(daemon) {
                try Self.waitForScan(try daemon.connectMPD())
                try body(daemon, tree, directory)
            }
        }

        /// The tree served by Debian's MPD and by the daemon, both scanned, one client on each.
        static func beside(_ songs: [MusicTree.Song] = songs, _ body: (_ ours: MPDTestClient, _ theirs: MPDTestClient) throws -> Void)
            throws
        {
            let directory = try TemporaryDirectory()
            defer { directory.remove() }
            let tree = try MusicTree(at: directory.path("music"), songs)
            let peer = try DebianMPD(musicDirectory: tree.root)
            defer { peer.stop() }
            let daemon = try Self.start(tree.root, directory)
            try withExtendedLifetime(daemon) {
                let ours = try daemon.connectMPD()
                try Self.waitForScan(ours)
                try body(ours, try peer.connect())
            }
        }

        @Test func listingsAndCountsAreMPDs() throws {
            try Self.beside { ours, theirs in

                let stats = try ours.command("stats")
                let peerStats = try theirs.command("stats")
                for key in ["artists", "albums", "songs", "db_playtime"] {
                    #expect(stats[key] == peerStats[key], "stats \(key): \(stats) against \(peerStats)")
                }
                #expect((Int(stats["db_update"] ?? "0") ?? 0) > 0)
                for command in [
                    "lsinfo", "lsinfo Alpha", "lsinfo \"Béta/Zwölf\"", "lsinfo \"Alpha/One/01 First.flac\"",
                    "listall", "listall Alpha", "listallinfo", "listallinfo \"Béta\"",
                ] {
                    let reply = try ours.command(command)
                    let expected = try theirs.command(command)
                    #expect(reply.lines == expected.lines, "\(command):\n\(reply)\nMPD:\n\(expected)")
                }
                let missing = try ours.command("lsinfo nowhere")
                let peerMissing = try theirs.command("lsinfo nowhere")
                #expect(missing.ack == peerMissing.ack, "\(missing) against \(peerMissing)")
            }
        }

        /// Searches, counts and lists, every form MPD 0.23 takes, answered as it answers them.
        static let searches = [
            "find artist Alpha", "find Artist Alpha album One", "find \"(artist == 'Alpha')\"", "find artist alpha",
            "search artist alpha", "search title CAFÉ", "search any alp", "search any zwölf", "find any Various",
            "find albumartist Alpha", "find albumartist Various", "find albumartistsort Alpha", "find genre \"\"",
            "find \"(genre != 'Rock')\"", "find \"(!(artist == 'Alpha'))\"", "find \"((artist == 'Alpha') AND (album == 'One'))\"",
            "find \"(base 'Alpha')\"", "find base Alpha", "find \"(file == 'loose.wav')\"", "search \"(title contains 'ec')\"",
            "find \"(title =~ '^S')\"", "search \"(title =~ '^s')\"", "find \"(artist !~ 'a$')\"",
            "find \"(AudioFormat == '44100:16:2')\"", "find \"(AudioFormat =~ '44100:*:2')\"",
            "find artist Alpha sort -title", "find artist Alpha sort Title window 0:1", "search any a sort Album window 1:3",
            "find \"(modified-since '2000-01-01T00:00:00Z')\"", "find modified-since 4102444800",
            "count artist Alpha", "count group artist", "count \"(album == 'Zwölf')\" group title", "count genre Rock",
            "list artist", "list album", "list album group albumartist", "list album Alpha", "list albumartist", "list genre",
            "list date group artist", "list title \"(artist == 'Gamma')\"", "list file \"(artist == 'Alpha')\"",
            "findadd \"(artist == 'Gamma')\"", "playlist",
            "find nosuchtag x", "find \"(artist ==)\"", "find \"(artist == 'x'\"", "list nosuch", "find artist",
            "list album group album",
        ]

        @Test func searchesAreMPDs() throws {
            try Self.beside { ours, theirs in
                for command in Self.searches {
                    let reply = try ours.command(command)
                    let expected = try theirs.command(command)
                    // MPD 0.23 leaves a song's Format out of sorted replies; Tonearm keeps it.
                    let lines = command.contains(" sort ") ? reply.lines.filter { !$0.hasPrefix("Format: ") } : reply.lines
                    #expect(lines == expected.lines && reply.end == expected.end, "\(command):\n\(reply)\nMPD:\n\(expected)")
                }
                // PCRE's words and Foundation's differ; the code and the start are MPD's.
                let badRegex = try ours.command("find \"(title =~ '(')\"")
                #expect(badRegex.end.hasPrefix("ACK [2@0] {find} Error in regex"), "\(badRegex)")
            }
        }

        /// `add`s and `addid`s in a command list (run as one batch) answer and fill the queue as
        /// MPD's one by one do, up to and including a URI that fails in the middle.
        @Test func commandListsOfAddsAreMPDs() throws {
            let lists = [
                ["add \"Alpha/One/01 First.flac\"", "add Alpha/Two", "add loose.wav", "add \"Béta\""],
                ["add loose.wav", "add \"Alpha/One/02 Second.flac\"", "add nowhere", "add loose.wav"],
                ["addid loose.wav", "addid \"Béta/Zwölf/02 Naïve.flac\"", "add Alpha", "addid Alpha", "addid loose.wav"],
                ["addid loose.wav", "addid \"Alpha/nowhere.flac\"", "addid loose.wav"],
                ["add loose.wav", "add loose.wav 0", "add \"Alpha/One/01 First.flac\"", "status", "add loose.wav"],
            ]
            try Self.beside { ours, theirs in
                for (index, list) in lists.enumerated() {
                    for begin in ["command_list_begin", "command_list_ok_begin"] {
                        let text = ([begin] + list + ["command_list_end"]).joined(separator: "\n")
                        // Queue ids differ (MPD's start at 1); statuses differ in what plays.
                        func answer(_ client: MPDTestClient) throws -> [String] {
                            #expect(try client.command("clear").ok)
                            let reply = try client.command(text)
                            let queue = try client.command("playlistinfo")
                            return reply.lines.map { $0.hasPrefix("Id: ") ? "Id" : $0 }.filter {
                                !$0.contains(": ") || $0.hasPrefix("file: ")
                            }
                                + [reply.end, "queue:"] + queue.lines.filter { $0.hasPrefix("file: ") || $0.hasPrefix("Title: ") }
                        }
                        let reply = try answer(ours)
                        let expected = try answer(theirs)
                        #expect(reply == expected, "list \(index) \(begin):\n\(reply)\nMPD:\n\(expected)")
                    }
                }
            }
        }

        /// A reply kept for the next identical question is dropped as soon as a scan changes the
        /// database: the question asked again sees the new song.
        @Test func keptRepliesFollowTheDatabase() throws {
            try Self.scanned { daemon, tree, _ in
                let client = try daemon.connectMPD()
                let before = try client.command("list artist").values("Artist")
                #expect(try client.command("list artist").values("Artist") == before, "the kept reply")
                #expect(try client.command("count artist Delta")["songs"] == "0")
                try tree.add(.init("Delta/x.flac", ["artist": "Delta", "title": "X"]))
                #expect(try client.command("update Delta").ok)
                let deadline = Date().addingTimeInterval(10 * Sanitizer.timeScale)
                var after = before
                while Date() < deadline {
                    after = try client.command("list artist").values("Artist")
                    if after.contains("Delta") { break }
                    usleep(20_000)
                }
                #expect(after == (before + ["Delta"]).sorted(), "\(after)")
                #expect(try client.command("count artist Delta")["songs"] == "1")
                #expect(try client.command("find artist Delta").values("Title") == ["X"])
            }
        }

        /// A music directory that goes away (an unmounted disk) erases nothing: `status` and
        /// `stats` say it is offline, every song is still found, and a scan once it is back
        /// clears the state.
        @Test func anOfflineMusicDirectoryKeepsTheLibrary() throws {
            try Self.scanned { daemon, tree, directory in
                let client = try daemon.connectMPD()
                let songs = try client.command("stats")["songs"]
                func updated() throws -> (status: MPDTestClient.Reply, stats: MPDTestClient.Reply) {
                    #expect(try client.command("update").ok)
                    let deadline = Date().addingTimeInterval(10 * Sanitizer.timeScale)
                    while try client.command("status")["updating_db"] != nil, Date() < deadline { usleep(20_000) }
                    return (try client.command("status"), try client.command("stats"))
                }
                try FileManager.default.moveItem(atPath: tree.root, toPath: directory.path("away"))
                let away = try updated()
                #expect(away.status["error"]?.hasPrefix("music directory offline: ") == true, "\(away.status)")
                #expect(away.stats["library_offline"] != nil && away.stats["songs"] == songs, "\(away.stats)")
                #expect(try client.command("find artist Alpha").values("file").count == 3)

                try FileManager.default.moveItem(atPath: directory.path("away"), toPath: tree.root)
                let back = try updated()
                #expect(back.status["error"] == nil && back.stats["library_offline"] == nil, "\(back.status)\n\(back.stats)")
                #expect(back.stats["songs"] == songs)
            }
        }

        /// Songs added from the library (`add` of a directory, `findadd`) carry the database's
        /// tags into the queue: the listing right after the add shows every title, where reading
        /// 200 files on the tag reader's thread would still be under way.
        @Test func librarySongsComeWithTheirTags() throws {
            let directory = try TemporaryDirectory()
            defer { directory.remove() }
            let tree = try MusicTree(at: directory.path("music"), [.init("Many/000.flac", ["artist": "Many", "title": "Song"])])
            for index in 1..<200 {
                try FileManager.default.copyItem(
                    atPath: tree.root + "/Many/000.flac", toPath: tree.root + String(format: "/Many/%03d.flac", index))
            }
            let daemon = try Self.start(tree.root, directory)
            try withExtendedLifetime(daemon) {
                let client = try daemon.connectMPD()
                try Self.waitForScan(client)
                #expect(try client.command("add Many").ok)
                #expect(try client.command("playlistinfo").values("Title").count == 200)
                #expect(try client.command("clear").ok)
                #expect(try client.command("findadd artist Many").ok)
                #expect(try client.command("playlistinfo").values("Title").count == 200)
            }
        }

        /// JSON-RPC's library methods on the same tree: counts, a directory, searches by words
        /// and by filter, distinct values grouped, a scan, and `add` of a library path.
        @Test func jsonRPCBrowsesSearchesAndLists() throws {
            try Self.scanned { daemon, tree, _ in
                let client = try daemon.connect()
                let stats = try #require(try client.call("library.stats").result)  // before the fourth song below
                #expect(stats["songs"] as? Int == 6 && stats["artists"] as? Int == 3 && stats["albums"] as? Int == 3, "\(stats)")

                let browsed = try #require(try client.call("library.browse", ["path": "Béta/Zwölf"]).result)
                let songs = try #require(browsed["songs"] as? [[String: Any]])
                #expect(songs.map { $0["uri"] as? String } == ["Béta/Zwölf/01 Café.flac", "Béta/Zwölf/02 Naïve.flac"])
                #expect((songs.first?["tags"] as? [String: Any])?["Title"] as? [String] == ["Café"])
                let root = try #require(try client.call("library.browse").result)
                #expect((root["directories"] as? [[String: Any]])?.compactMap { $0["path"] as? String } == ["Alpha", "Béta", "zz"])

                // Words in any tag or the path, case folded; a filter expression; both, sorted.
                func uris(_ params: [String: Any]) throws -> [String] {
                    let answer = try client.call("library.search", params)
                    return ((answer.result?["songs"] as? [[String: Any]]) ?? []).compactMap { $0["uri"] as? String }
                }
                #expect(try uris(["query": "CAFÉ"]) == ["Béta/Zwölf/01 Café.flac"])
                #expect(try uris(["query": "alpha one"]) == ["Alpha/One/01 First.flac", "Alpha/One/02 Second.flac"])
                #expect(try uris(["query": "loose"]) == ["loose.wav"], "the path counts too")
                #expect(
                    try uris(["filter": "(albumartist == 'Various')", "sort": "-title"])
                        == ["Béta/Zwölf/02 Naïve.flac", "Béta/Zwölf/01 Café.flac"])
                #expect(try uris(["filter": "(artist == 'Alpha')", "offset": 1, "limit": 1]) == ["Alpha/One/02 Second.flac"])
                let bad = try client.call("library.search", ["filter": "(artist = 'x')"])
                #expect((bad["error"] as? [String: Any])?["code"] as? Int == -32602, "\(bad)")

                let listed = try #require(try client.call("library.list", ["tag": "Album", "group": ["AlbumArtist"]]).result)
                let rows = try #require(listed["values"] as? [[String: String]])
                #expect(rows.contains { $0 == ["AlbumArtist": "Various", "Album": "Zwölf"] }, "\(rows)")
                #expect(rows.contains { $0 == ["AlbumArtist": "Alpha", "Album": "One"] }, "\(rows)")

                // A scan's news, for a subscriber of `library` events.
                let events = try daemon.connect()
                #expect(try events.call("subscribe", ["events": ["library"]]).result != nil)
                try tree.add(.init("Alpha/Two/02 Fourth.flac", ["artist": "Alpha", "album": "Two", "title": "Fourth"]))
                let job = try #require(try client.call("library.update", ["path": "Alpha"]).result)
                let number = try #require(job["job"] as? Int)
                var heard: [String] = []
                let deadline = Date().addingTimeInterval(10 * Sanitizer.timeScale)
                while heard.last != "changed", Date() < deadline {
                    let message = try events.readJSON(timeout: 10 * Sanitizer.timeScale)
                    guard let params = message["params"] as? [String: Any], params["type"] as? String == "library" else { continue }
                    heard.append(params["event"] as? String ?? "?")
                    if params["event"] as? String == "scan_finished" {
                        #expect(params["job"] as? Int == number && params["added"] as? Int == 1, "\(params)")
                    }
                }
                #expect(heard == ["scan_started", "scan_finished", "changed"], "\(heard)")
                let added = try client.call("add", ["urls": ["Alpha/One/01 First.flac"]])
                #expect((added.result?["items"] as? [[String: Any]])?.count == 1, "\(added)")
                // A directory of the library: its songs, in the library's order, with their tags.
                let album = try #require(client.call("add", ["urls": ["Alpha"]]).result?["items"] as? [[String: Any]])
                #expect(
                    album.compactMap { ($0["url"] as? String)?.split(separator: "/").suffix(3).joined(separator: "/") }
                        == ["Alpha/One/01 First.flac", "Alpha/One/02 Second.flac", "Alpha/Two/01 Third.ogg", "Alpha/Two/02 Fourth.flac"],
                    "\(album)")
                let queued = try #require(client.call("queue").result?["items"] as? [[String: Any]])
                #expect(queued.suffix(4).compactMap { $0["title"] as? String } == ["First", "Second", "Third", "Fourth"], "\(queued)")
                let escape = try client.call("add", ["urls": ["../outside.flac"]])
                #expect((escape["error"] as? [String: Any])?["code"] as? Int == -32602, "\(escape)")

                // tonearmctl's words for the same methods.
                let ctl = (DaemonProcess.binary() as NSString).deletingLastPathComponent + "/tonearmctl"
                let environment = ["TONEARM_SOCKET": daemon.socketPath, "PATH": "/usr/bin:/bin"]
                let found = try runTool(ctl, ["search", "café"], environment: environment, timeout: 20)
                #expect(found.status == 0 && found.output == "Béta/Zwölf/01 Café.flac  Béta – Café  0:03\n", "\(found.output)")
                let directories = try runTool(ctl, ["ls", "Alpha"], environment: environment, timeout: 20)
                #expect(directories.output == "Alpha/One/\nAlpha/Two/\n", "\(directories.output)")
                let scan = try runTool(ctl, ["update"], environment: environment, timeout: 20)
                #expect(scan.status == 0 && scan.output.hasPrefix("scan job "), "\(scan.output)")
            }
        }

        /// mpc's `update --wait`, and what `idle` says of a scan: `update` when it starts and ends,
        /// `database` when it changed something.
        @Test func mpcUpdatesAndIdleHearsIt() throws {
            let directory = try TemporaryDirectory()
            defer { directory.remove() }
            let tree = try MusicTree(at: directory.path("music"), Array(Self.songs.prefix(2)))
            let daemon = try Self.start(tree.root, directory)
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
