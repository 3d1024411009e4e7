import Foundation
import Testing
import TonearmProtocol
import TonearmTestSupport

#if canImport(Glibc)
    import Glibc
#endif

extension DaemonTests {
    /// MPD's protocol on the real daemon's MPD socket, spoken by a plain client; the answers
    /// expected are those Debian's MPD 0.23 gives (docs/mpd.md).
    @Suite("Daemon speaks MPD's protocol", .serialized, .realDaemon(minutes: 3))
    struct DaemonMPDTests {
        /// A daemon whose music directory is a fresh temporary directory holding `files` (fixture
        /// names, or name → fixture).
        static func daemon(music: [String: String], config: String = "", arguments: [String] = [])
            throws -> (DaemonProcess, TemporaryDirectory)
        {
            let music = try makeMusicDirectory(music)
            let configPath = music.path(".tonearmd.toml")
            try ("[mpd]\nmusic_directory = \"\(music.url.path)\"\n" + config).write(toFile: configPath, atomically: true, encoding: .utf8)
            let daemon = try DaemonProcess(arguments: ["--device", "null", "--pace", "--config", configPath] + arguments)
            return (daemon, music)
        }

        static func makeMusicDirectory(_ files: [String: String]) throws -> TemporaryDirectory {
            let music = try TemporaryDirectory()
            for (name, fixture) in files {
                let path = music.path(name)
                try FileManager.default.createDirectory(
                    atPath: (path as NSString).deletingLastPathComponent,
                    withIntermediateDirectories: true)
                try FileManager.default.copyItem(atPath: Fixtures.path(fixture), toPath: path)
            }
            return music
        }

        @Test func answersAsMPDDoes() throws {
            let (daemon, music) = try Self.daemon(music: ["a.flac": "tone.flac"])
            defer { music.remove() }
            let mpd = try daemon.connectMPD()
            #expect(mpd.greeting == "OK MPD 0.23.5")
            #expect(try mpd.command("ping").ok)
            #expect(try mpd.command("pIng").end == #"ACK [5@0] {} unknown command "pIng""#)
            #expect(try mpd.command("status 1").end == #"ACK [2@0] {status} wrong number of arguments for "status""#)
            #expect(try mpd.command("add").end == #"ACK [2@0] {add} too few arguments for "add""#)
            #expect(try mpd.command("setvol 101").end == "ACK [2@0] {setvol} Number too large: 101")
            #expect(try mpd.command("repeat 2").end == "ACK [2@0] {repeat} Boolean (0/1) expected: 2")
            #expect(try mpd.command("delete 3:1").end == "ACK [2@0] {delete} Malformed range: 3:1")
            #expect(try mpd.command("playlistinfo 1").end == "ACK [2@0] {playlistinfo} Bad song index")
            #expect(try mpd.command("playlistinfo 0").ok, "a start at the end is an empty range")
            #expect(try mpd.command("deleteid 99").end == "ACK [50@0] {deleteid} No such song")
            #expect(try mpd.command("next").end == "ACK [55@0] {next} Not playing")
            #expect(try mpd.command("seekcur 5").end == "ACK [55@0] {seekcur} Not playing")
            #expect(
                try mpd.command("single maybe").end
                    == "ACK [2@0] {single} Unrecognized single mode, expected 0, 1, or oneshot")
            #expect(try mpd.command(#"lsinfo "unterminated"#).end == #"ACK [5@0] {} Missing closing '"'"#)
            #expect(try mpd.command("lsinfo 'x'").end == "ACK [5@0] {} Invalid unquoted character")
            #expect(try mpd.command("add nothing/here.flac").end == "ACK [50@0] {add} No such directory")
            #expect(try mpd.command("command_list_end").end == #"ACK [5@0] {} unknown command "command_list_end""#)
            #expect(try mpd.command("idle nonsense").end == "ACK [2@0] {idle} Unrecognized idle event: nonsense")

            // Command lists: list_OK after each, the failing one's index, nothing run after it.
            try mpd.connection.send(line: "command_list_ok_begin\nping\ngetvol\nfoo\nsetvol 5\ncommand_list_end")
            let list = try mpd.reply()
            #expect(list.lines == ["list_OK", "volume: 100", "list_OK"])
            #expect(list.end == #"ACK [5@2] {} unknown command "foo""#)
            #expect(try mpd.command("getvol")["volume"] == "100", "the list stopped at the error")
            try mpd.connection.send(line: "command_list_begin\nsetvol 40\nrepeat 1\ncommand_list_end")
            #expect(try mpd.reply().lines.isEmpty)
            let status = try mpd.command("status")
            #expect(status["volume"] == "40" && status["repeat"] == "1", "\(status)")
            #expect(status.lines.first == "volume: 40" && status["state"] == "stop" && status["playlist"] != nil)

            // Quoting: a file name with spaces and quotes, added and listed back.
            let odd = #"odd "name" \ here.flac"#
            try FileManager.default.copyItem(atPath: Fixtures.path("tone.flac"), toPath: music.path(odd))
            let added = try mpd.command("addid " + quote(odd))
            #expect(added.ok && added["Id"] != nil, "\(added)")
            #expect(try mpd.command("playlistinfo").values("file") == [odd])

            // noidle when not idle: no answer at all (the next answer read is ping's).
            try mpd.connection.send(line: "noidle")
            #expect(try mpd.command("ping").ok)
            #expect(daemon.process.isRunning)
        }

        private func quote(_ text: String) -> String {
            "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
        }

        @Test func badInputClosesOnlyThatClient() throws {
            let (daemon, music) = try Self.daemon(music: [:])
            defer { music.remove() }
            let bystander = try daemon.connectMPD()
            for garbage in [
                Data([0x00, 0xFF, 0xFE, 0x0A]), Data("\n".utf8), Data(" ping\n".utf8),
                Data(repeating: UInt8(ascii: "a"), count: 9000) + Data("\n".utf8), Data("foo-bar\n".utf8),
            ] {
                let client = try daemon.connectMPD()
                try client.connection.send(raw: garbage)
                #expect(client.isClosed(), "closed after \(garbage.prefix(12).map { $0 })")
            }
            // A command list that never ends holds only its own client, up to 2 MiB; then it is closed.
            let lister = try daemon.connectMPD()
            try lister.connection.send(line: "command_list_begin")
            let line = Data(("add \"" + String(repeating: "a", count: 8000) + "\"\n").utf8)
            for _ in 0..<270 { try? lister.connection.send(raw: line) }
            #expect(lister.isClosed())
            // While idle, anything but noidle closes the connection.
            let idler = try daemon.connectMPD()
            try idler.connection.send(line: "idle")
            try idler.connection.send(line: "status")
            #expect(idler.isClosed())
            #expect(try bystander.command("ping").ok)
            #expect(try daemon.connect().call("ping").result == nil || daemon.process.isRunning)
        }

        @Test func idleHearsChangesMadeThroughEitherProtocol() throws {
            let (daemon, music) = try Self.daemon(music: ["a.flac": "tone.flac"])
            defer { music.remove() }
            let json = try daemon.connect()
            let idler = try daemon.connectMPD()
            let other = try daemon.connectMPD()

            try idler.connection.send(line: "idle mixer playlist")
            _ = try json.call("volume", ["level": 30])
            #expect(try idler.reply().lines == ["changed: mixer"])

            // Changes made while not idle wait for the next idle, which answers at once.
            // (Asked for the playlist only: the scan at start may end now and say update, database.)
            #expect(try other.command("add a.flac").ok)
            try idler.connection.send(line: "idle playlist")
            #expect(try idler.reply().lines == ["changed: playlist"])

            try idler.connection.send(line: "idle player")
            #expect(try other.command("play").ok)
            #expect(try idler.reply().lines == ["changed: player"])
            let status = try json.call("status")
            #expect(status.stateName == "playing", "\(status)")

            // noidle ends idle with an empty answer.
            try idler.connection.send(line: "idle stored_playlist")
            try idler.connection.send(line: "noidle")
            #expect(try idler.reply().lines.isEmpty)

            // And the JSON side sees what MPD's side did.
            #expect(try other.command("setvol 70").ok)
            #expect(try json.call("status").result?["volume"] as? Int == 70)
        }

        @Test func theQueueIsOneForBothProtocols() throws {
            let (daemon, music) = try Self.daemon(music: [
                "a.flac": "tone.flac", "b/c.flac": "gapless-1.flac",
                "b/d.flac": "gapless-2.flac",
            ])
            defer { music.remove() }
            let json = try daemon.connect()
            let mpd = try daemon.connectMPD()
            #expect(try mpd.command("add b").ok, "a directory adds every song under it")
            let first = try mpd.command("addid a.flac 0")
            let firstID = try #require(first["Id"].flatMap(Int.init))
            let queue = try #require(json.call("queue").result)
            let items = try #require(queue["items"] as? [[String: Any]])
            #expect(items.compactMap { $0["id"] as? Int }.first == firstID)
            #expect(
                items.compactMap { ($0["url"] as? String).map { ($0 as NSString).lastPathComponent } } == ["a.flac", "c.flac", "d.flac"])

            let info = try mpd.command("playlistinfo")
            #expect(info.values("file") == ["a.flac", "b/c.flac", "b/d.flac"])
            #expect(info.values("Id").compactMap(Int.init) == items.compactMap { $0["id"] as? Int })
            #expect(info.values("Pos") == ["0", "1", "2"])

            // plchanges: what changed since a version, and MPD's playlist version is the queue's.
            let version = try #require(mpd.command("status")["playlist"].flatMap(Int.init))
            #expect(version == queue["version"] as? Int)
            let moved = try #require(info.values("Id").last)
            #expect(try mpd.command("moveid \(moved) 0").ok)
            let changes = try mpd.command("plchangesposid \(version)")
            #expect(changes.values("cpos") == ["0", "1", "2"] && changes.values("Id").first == moved, "\(changes)")
            #expect(try mpd.command("plchanges \(version + 1)").lines.isEmpty)

            #expect(try mpd.command("play 1").ok)
            let playing = try mpd.command("status")
            #expect(playing["state"] == "play" && playing["song"] == "1" && playing["nextsong"] == "2", "\(playing)")
            #expect(playing["audio"] == "44100:16:2" && playing["duration"] != nil, "\(playing)")
            let current = try mpd.command("currentsong")
            #expect(current["Pos"] == "1" && current["Title"] != nil, "\(current)")
            #expect(try json.call("status").result?["current"] as? Int == Int(current["Id"] ?? ""))

            #expect(try mpd.command("pause 1").ok)
            let paused = try mpd.command("status")
            #expect(paused["state"] == "pause")
            let pausedAt = try #require(paused["elapsed"].flatMap(Double.init))
            #expect(try mpd.command("seekcur +0.5").ok)
            let elapsed = try #require(mpd.command("status")["elapsed"].flatMap(Double.init))
            #expect(abs(elapsed - (pausedAt + 0.5)) < 0.002 && pausedAt < 0.5, "paused at \(pausedAt), then \(elapsed)")
            #expect(try mpd.command("delete 0:2").ok)
            #expect(try mpd.command("status")["playlistlength"] == "1")
            #expect(try mpd.command("clear").ok)
            #expect((try json.call("queue").result?["items"] as? [Any])?.isEmpty == true)
            #expect(try mpd.command("status")["state"] == "stop")
        }

        /// Lines that arrive together are answered in order, also when a later one closes the
        /// connection (a command while idle): the replies before it are not dropped.
        @Test func repliesBeforeAClosingLineAreWritten() throws {
            let (daemon, music) = try Self.daemon(music: [:])
            defer { music.remove() }
            let mpd = try daemon.connectMPD()
            try mpd.connection.send(raw: Data("ping\nidle\nstatus\n".utf8))
            #expect(try mpd.connection.readLine(timeout: 5) == "OK", "ping's answer came before the close")
            #expect(mpd.isClosed(), "a command while idle closes the connection")
        }

        /// The other defects issue's §9: only `scheme://` makes a URI; a name with a colon is a path.
        @Test func aNameWithAColonIsAPathNotAURIScheme() throws {
            let (daemon, music) = try Self.daemon(music: ["Bach: Suite.flac": "tone.flac", "Live: 2020/a.flac": "tone.flac"])
            defer { music.remove() }
            let mpd = try daemon.connectMPD()
            // Listings come from the database: the scan at start must have reached the subdirectory.
            try DaemonLibraryTests.waitForScan(mpd)
            #expect(Set(try mpd.command("lsinfo").values("file")) == ["Bach: Suite.flac"])
            #expect(try mpd.command(#"add "Bach: Suite.flac""#).ok)
            #expect(try mpd.command(#"lsinfo "Live: 2020""#).values("file") == ["Live: 2020/a.flac"])
            #expect(try mpd.command(#"add "Live: 2020""#).ok)
            #expect(try mpd.command("playlistinfo").values("file") == ["Bach: Suite.flac", "Live: 2020/a.flac"])
            #expect(try mpd.command("add gopher://host/x.flac").end == "ACK [50@0] {add} Unsupported URI scheme")
        }

        /// The other defects issue's §10: `consume` removes a song that played to its end also
        /// when nothing follows it (the queue's end, or `single`), as MPD does; `playlist`
        /// answers MPD's "POS:file: URI" lines.
        @Test func consumeRemovesTheLastSongAndPlaylistAnswersAsMPD() throws {
            let (daemon, music) = try Self.daemon(music: [
                "a.flac": "gapless-1.flac", "b.flac": "gapless-2.flac",
                "c.flac": "gapless-3.flac",
            ])
            defer { music.remove() }
            let mpd = try daemon.connectMPD()
            for name in ["a.flac", "b.flac", "c.flac"] { #expect(try mpd.command("add \(name)").ok) }
            #expect(try mpd.command("playlist").lines == ["0:file: a.flac", "1:file: b.flac", "2:file: c.flac"])
            // single: the song stops after itself, and is consumed.
            #expect(try mpd.command("consume 1").ok && mpd.command("single 1").ok)
            #expect(try mpd.command("play 0").ok)
            var status = try waitForMPDStatus(mpd) { $0["state"] == "stop" }
            #expect(try mpd.command("playlist").lines == ["0:file: b.flac", "1:file: c.flac"], "\(status)")
            // The queue's end: the last song goes too.
            #expect(try mpd.command("single 0").ok && mpd.command("play 1").ok)
            status = try waitForMPDStatus(mpd) { $0["state"] == "stop" }
            #expect(try mpd.command("playlist").lines == ["0:file: b.flac"], "\(status)")
            #expect(status["song"] == nil, "no current song once it is consumed: \(status)")
        }

        @Test func theMusicDirectoryIsListedAndItsPlaylistsLoad() throws {
            let (daemon, music) = try Self.daemon(music: [
                "a.flac": "tone.flac", "sub/b.flac": "gapless-1.flac",
                "sub/deeper/c.mp3": "tone.mp3", "notes.txt": "gapless.m3u",
            ])
            defer { music.remove() }
            try "a.flac\nsub/b.flac\n".write(toFile: music.path("mix.m3u"), atomically: true, encoding: .utf8)
            let mpd = try daemon.connectMPD()
            try DaemonLibraryTests.waitForScan(mpd)
            let root = try mpd.command("lsinfo")
            #expect(root.values("file") == ["a.flac"] && root.values("directory") == ["sub"], "\(root)")
            #expect(root.values("playlist") == ["mix"], "\(root)")
            #expect(root["Title"] == "Test Tone" && root["Last-Modified"]?.hasSuffix("Z") == true, "\(root)")
            let all = try mpd.command("listall")
            #expect(
                all.lines == [
                    "file: a.flac", "directory: sub", "file: sub/b.flac", "directory: sub/deeper",
                    "file: sub/deeper/c.mp3",
                ], "\(all)")
            #expect(try mpd.command("listallinfo sub").values("file") == ["sub/b.flac", "sub/deeper/c.mp3"])
            #expect(try mpd.command("lsinfo nowhere").end == "ACK [50@0] {lsinfo} No such directory")
            #expect(try mpd.command("lsinfo ../..").end.hasPrefix("ACK [2@0] {lsinfo}"))
            #expect(
                try mpd.command("lsinfo /etc").end == "ACK [50@0] {lsinfo} No such directory",
                "only the music directory is listed")
            #expect(
                try mpd.command("lsinfo " + music.path("sub")).values("file") == ["sub/b.flac"],
                "an absolute path inside it is")
            #expect(try mpd.command("listplaylists").values("playlist") == ["mix"])
            #expect(try mpd.command("listplaylist mix").values("file") == ["a.flac", "sub/b.flac"])
            #expect(try mpd.command("load mix").ok)
            #expect(try mpd.command("load nothing").end == "ACK [50@0] {load} No such playlist")
            #expect(try mpd.command("playlistinfo").values("file") == ["a.flac", "sub/b.flac"])
            // No search yet: the answers of an empty database.
            #expect(try mpd.command("find artist x").ok)
            #expect(try mpd.command("count artist x").lines == ["songs: 0", "playtime: 0"])
            #expect(try mpd.command("list artist").ok)
            #expect(try mpd.command("update")["updating_db"] == "2", "job 1 was the scan at start")
        }

        @Test func thePasswordComesFirstAndTCPNeedsOneBeyondLoopback() throws {
            let port = try freeTCPPort()
            let (daemon, music) = try Self.daemon(
                music: ["a.flac": "tone.flac"],
                config: "bind = \"127.0.0.1:\(port)\"\npassword = \"s3cret\"\n")
            defer { music.remove() }
            let mpd = try daemon.connectMPD()
            #expect(try mpd.command("status").end == #"ACK [4@0] {status} you don't have permission for "status""#)
            #expect(
                try mpd.command("commands").values("command")
                    == ["binarylimit", "close", "commands", "notcommands", "password", "ping", "tagtypes"])
            #expect(try mpd.command("password wrong").end == "ACK [3@0] {password} incorrect password")
            #expect(try mpd.command("password s3cret").ok)
            #expect(try mpd.command("status").ok)

            // Over TCP with mpc: refused without the password, served with it.
            let refused = try mpc(["status"], host: "127.0.0.1", port: port)
            #expect(refused.output.contains("you don't have permission"), "\(refused)")
            let served = try mpc(["add", "a.flac"], host: "s3cret@127.0.0.1", port: port)
            #expect(served.status == 0, "\(served)")
            #expect(try mpd.command("status")["playlistlength"] == "1")

            // A TCP port other machines can reach without a password: the daemon will not start.
            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            try "[mpd]\nbind = \"0.0.0.0:\(try freeTCPPort())\"\n".write(toFile: dir.path("c.toml"), atomically: true, encoding: .utf8)
            let open = try DaemonProcess(arguments: ["--device", "null", "--config", dir.path("c.toml")])
            let deadline = Date().addingTimeInterval(10)
            while open.process.isRunning && Date() < deadline { usleep(20_000) }
            #expect(!open.process.isRunning && open.process.terminationStatus != 0)
            #expect(open.log.contains("accepts clients from other machines; set mpd.password"), "\(open.log)")
        }

        @Test func manyIdleClientsCostNothingAndAreAllTold() throws {
            let (daemon, music) = try Self.daemon(music: [:], config: "max_clients = 300\n")
            defer { music.remove() }
            var idlers: [MPDTestClient] = []
            for _ in 0..<300 {
                let client = try daemon.connectMPD()
                try client.connection.send(line: "idle mixer")
                idlers.append(client)
            }
            // One more than the limit is told so and closed; everyone else carries on.
            let extra = try MPDTestClient(path: daemon.mpdSocketPath)
            #expect(extra.greeting.hasPrefix("ACK [52@0] {} too many clients"), "\(extra.greeting)")
            let json = try daemon.connect()
            _ = try json.call("volume", ["level": 10])
            for idler in idlers { #expect(try idler.reply().lines == ["changed: mixer"]) }
            // Waiting clients cost nothing: no polling, no timers.
            for idler in idlers { try idler.connection.send(line: "idle") }
            usleep(200_000)
            let pid = daemon.process.processIdentifier
            let before = try ProcessResources.cpuSeconds(pid: pid)
            usleep(1_000_000)
            let waitingCPU = try ProcessResources.cpuSeconds(pid: pid) - before
            #expect(waitingCPU < 0.05, "300 idle clients cost \(waitingCPU) s of CPU in 1 s")
            #expect(try json.call("ping").result != nil || daemon.process.isRunning)
        }
    }
}

/// Runs Debian's mpc against `host` (a socket path, or password@address) and `port`, bounded in time.
func mpc(_ arguments: [String], host: String, port: Int? = nil, timeout: Double = 20) throws -> (status: Int32?, output: String) {
    var environment = ["MPD_HOST": host, "PATH": "/usr/bin:/bin"]
    if let port { environment["MPD_PORT"] = String(port) }
    return try runTool("/usr/bin/mpc", arguments, environment: environment, timeout: timeout)
}
