import Foundation
import Testing
import TonearmTestSupport

extension DaemonTests {
    /// The library follows the music directory as it changes (inotify), and where the kernel
    /// allows no more watches, by whole scans at `library.rescan_interval_s`.
    @Suite("Daemon's library follows the music directory", .serialized, .realDaemon(minutes: 3))
    struct DaemonLibraryWatchTests {
        /// The issue's bound: a change is in the database within 2 s (longer under a sanitizer).
        static let within = 2.0 * Sanitizer.timeScale

        /// Waits until `lsinfo uri`'s files are `expected`; fails with what it last saw.
        private func waitForFiles(
            _ client: MPDTestClient, _ uri: String, _ expected: [String], within seconds: Double = within,
            sourceLocation: SourceLocation = #_sourceLocation
        ) throws {
            let deadline = Date().addingTimeInterval(seconds)
            var files: [String] = []
            while Date() < deadline {
                files = try client.command("lsinfo \"\(uri)\"").values("file")
                if files == expected { return }
                usleep(20_000)
            }
            Issue.record("lsinfo \(uri): \(files), expected \(expected) within \(seconds) s", sourceLocation: sourceLocation)
        }

        private func config(_ directory: TemporaryDirectory, _ music: String, _ extra: String = "") throws -> String {
            let path = directory.path("tonearmd.toml")
            try "[library]\nmusic_directory = \"\(music)\"\n\(extra)".write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }

        /// A daemon on a new tree of `DaemonLibraryTests.songs`, its first scan done: `body` gets
        /// the test's directory, the tree, the daemon and a client of it.
        private func withScannedTree(_ body: (TemporaryDirectory, MusicTree, DaemonProcess, MPDTestClient) throws -> Void) throws {
            let directory = try TemporaryDirectory()
            defer { directory.remove() }
            let tree = try MusicTree(at: directory.path("music"), DaemonLibraryTests.songs)
            let daemon = try DaemonProcess(arguments: ["--device", "null", "--config", try config(directory, tree.root)])
            try withExtendedLifetime(daemon) {
                let client = try daemon.connectMPD()
                try DaemonLibraryTests.waitForScan(client)
                try body(directory, tree, daemon, client)
            }
        }

        /// A change the watcher sees reaches every listing a client asked before it (each kept
        /// as a reply, and `list`/`count` grouped from the tag index): the next `list album`,
        /// `count`, `find` and `stats` show the song added, then no longer the song removed.
        @Test func aWatchedChangeReachesEveryListingAskedBefore() throws {
            try withScannedTree { directory, tree, daemon, client in
                func listings() throws -> (albums: [String], zeta: [String], found: [String], songs: String?) {
                    (
                        try client.command("list album group albumartist").values("Album"),
                        try client.command("count group artist").values("songs").isEmpty
                            ? [] : try client.command("count artist Zeta").values("songs"),
                        try client.command("find artist Zeta").values("file"),
                        try client.command("stats").values("songs").first
                    )
                }
                let before = try listings()
                #expect(!before.albums.contains("Nova") && before.zeta == ["0"] && before.found.isEmpty)
                // Kept replies are let go when the scan that changed the database ends, before
                // `idle database` is answered: a client that hears of the change asks again.
                let watcher = try daemon.connectMPD()
                func change(_ make: () throws -> Void) throws {
                    try watcher.connection.send(line: "idle database")
                    try make()
                    let news = try watcher.reply(timeout: Self.within)
                    #expect(news.values("changed") == ["database"], "\(news)")
                }

                try change { try tree.add(.init("Zeta/Nova/01 Star.flac", ["artist": "Zeta", "album": "Nova", "title": "Star"])) }
                let added = try listings()
                #expect(added.albums.contains("Nova"), "\(added.albums)")
                #expect(added.zeta == ["1"] && added.found == ["Zeta/Nova/01 Star.flac"])
                #expect(Int(added.songs ?? "") == Int(before.songs ?? "").map { $0 + 1 }, "\(String(describing: added.songs))")

                try change { try FileManager.default.removeItem(atPath: tree.root + "/Zeta") }
                let removed = try listings()
                #expect(removed.albums == before.albums && removed.zeta == ["0"] && removed.found.isEmpty)
                #expect(removed.songs == before.songs)
            }
        }

        @Test func addedRenamedAndDeletedFilesAndDirectoriesAreSeen() throws {
            try withScannedTree { directory, tree, daemon, client in
                let watcher = try daemon.connectMPD()
                try watcher.connection.send(line: "idle database")

                try tree.add(.init("Alpha/One/03 Third.flac", ["artist": "Alpha", "title": "Added"]))
                try waitForFiles(client, "Alpha/One", ["Alpha/One/01 First.flac", "Alpha/One/02 Second.flac", "Alpha/One/03 Third.flac"])
                let news = try watcher.reply(timeout: Self.within)
                #expect(news.values("changed") == ["database"], "\(news)")
                #expect(try client.command("find title Added").values("file") == ["Alpha/One/03 Third.flac"])

                try FileManager.default.moveItem(
                    atPath: tree.root + "/Alpha/One/03 Third.flac", toPath: tree.root + "/Alpha/Two/03 Moved.flac")
                try waitForFiles(client, "Alpha/Two", ["Alpha/Two/01 Third.ogg", "Alpha/Two/03 Moved.flac"])
                try waitForFiles(client, "Alpha/One", ["Alpha/One/01 First.flac", "Alpha/One/02 Second.flac"])

                try FileManager.default.removeItem(atPath: tree.root + "/Alpha/Two/03 Moved.flac")
                try waitForFiles(client, "Alpha/Two", ["Alpha/Two/01 Third.ogg"])

                // A new directory, a file in it, and one more level below.
                try tree.add(.init("Delta/Fresh/01 New.flac", ["artist": "Delta", "title": "New"]))
                try waitForFiles(client, "Delta/Fresh", ["Delta/Fresh/01 New.flac"])
                try tree.add(.init("Delta/Fresh/Deeper/01 Deep.flac", ["artist": "Delta", "title": "Deep"]))
                try waitForFiles(client, "Delta/Fresh/Deeper", ["Delta/Fresh/Deeper/01 Deep.flac"])
                // A directory moved in from outside the tree, with what it holds.
                let outside = try MusicTree(at: directory.path("outside"), [.init("Epsilon/01 Came.flac", ["title": "Came"])])
                try FileManager.default.moveItem(atPath: outside.root + "/Epsilon", toPath: tree.root + "/Epsilon")
                try waitForFiles(client, "Epsilon", ["Epsilon/01 Came.flac"])
                // A hard link is complete as it appears (no write follows it).
                try FileManager.default.linkItem(atPath: tree.root + "/loose.wav", toPath: tree.root + "/Epsilon/02 Linked.wav")
                try waitForFiles(client, "Epsilon", ["Epsilon/01 Came.flac", "Epsilon/02 Linked.wav"])
                // A directory replaced under its own name at once: what the new one holds.
                let other = try MusicTree(at: directory.path("other"), [.init("Epsilon/03 Other.flac", ["title": "Other"])])
                try FileManager.default.removeItem(atPath: tree.root + "/Epsilon")
                try FileManager.default.moveItem(atPath: other.root + "/Epsilon", toPath: tree.root + "/Epsilon")
                try waitForFiles(client, "Epsilon", ["Epsilon/03 Other.flac"])

                try FileManager.default.removeItem(atPath: tree.root + "/Delta")
                let deadline = Date().addingTimeInterval(Self.within)
                while try client.command("lsinfo Delta").ack == nil, Date() < deadline { usleep(20_000) }
                #expect(try client.command("lsinfo Delta").ack != nil, "Delta is gone")
                #expect(try client.command("find title Deep").values("file").isEmpty)
            }
        }

        /// The music directory swapped for a new one (`mv music music.old && mkdir music`), or
        /// removed and made again a moment later, is watched again at its path.
        @Test func aMusicDirectoryMovedAwayAndMadeAgainIsWatchedAgain() throws {
            try withScannedTree { directory, tree, daemon, client in
                // Swapped at once: the old watches would follow music.old.
                try FileManager.default.moveItem(atPath: tree.root, toPath: directory.path("music.old"))
                try FileManager.default.createDirectory(atPath: tree.root, withIntermediateDirectories: false)
                try tree.add(.init("New/01 Fresh.flac", ["title": "Fresh"]))
                try waitForFiles(client, "New", ["New/01 Fresh.flac"])
                // Gone for a while (the directory above is watched meanwhile), then made again.
                try FileManager.default.removeItem(atPath: tree.root)
                usleep(500_000)
                try FileManager.default.createDirectory(atPath: tree.root, withIntermediateDirectories: false)
                try tree.add(.init("Later/01 Back.flac", ["title": "Back"]))
                try waitForFiles(client, "Later", ["Later/01 Back.flac"])
            }
        }

        /// With the kernel's watches capped (a user namespace of its own, 2 watches), the
        /// daemon says so once and scans the whole tree every `rescan_interval_s`.
        @Test func pastTheWatchLimitTheTreeIsRescannedOnATimer() throws {
            let directory = try TemporaryDirectory()
            defer { directory.remove() }
            let tree = try MusicTree(at: directory.path("music"), DaemonLibraryTests.songs)
            let daemon = try DaemonProcess(
                arguments: ["--device", "null", "--config", try config(directory, tree.root, "rescan_interval_s = 1\n")],
                launcher: ["/usr/bin/unshare", "-Ur", "/bin/sh", "-c", "echo 2 > /proc/sys/user/max_inotify_watches && exec \"$0\" \"$@\""])
            try withExtendedLifetime(daemon) {
                let client = try daemon.connectMPD()
                try DaemonLibraryTests.waitForScan(client)
                try tree.add(.init("Alpha/One/03 Third.flac", ["artist": "Alpha", "title": "Third"]))
                try waitForFiles(
                    client, "Alpha/One", ["Alpha/One/01 First.flac", "Alpha/One/02 Second.flac", "Alpha/One/03 Third.flac"],
                    within: 3 * Self.within)
                #expect(daemon.log.components(separatedBy: "max_user_watches").count - 1 == 1, "\(daemon.log)")
            }
        }
    }
}

extension DaemonTests {
    /// `listallinfo` of a library larger than a client's output cap is streamed: a client that
    /// reads slowly gets all of it, and the daemon holds about one part of it at a time.
    @Suite("Daemon streams long library listings", .serialized, .realDaemon(minutes: 3))
    struct DaemonListingStreamTests {
        /// One short tagged file, linked under `count` long names (about 870 bytes of
        /// `listallinfo` each), 100 to a directory; the music directory's path.
        private static func longLibrary(_ directory: TemporaryDirectory, count: Int) throws -> String {
            let long = String(repeating: "x", count: 160)
            let tree = try MusicTree(at: directory.path("music"), [])
            let made = try runTool(
                "/usr/bin/ffmpeg",
                [
                    "-v", "error", "-y", "-f", "lavfi", "-i", "sine=d=0.02", "-metadata", "title=T\(long)",
                    "-metadata", "artist=A\(long)", "-metadata", "album=B\(long)",
                    tree.root + "/seed.flac",
                ], timeout: 30)
            try #require(made.status == 0, "\(made.output)")
            for index in 0..<count {
                let folder = tree.root + "/d\(index / 100)"
                if index % 100 == 0 { try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true) }
                try FileManager.default.linkItem(atPath: tree.root + "/seed.flac", toPath: folder + "/\(index) \(long).flac")
            }
            try FileManager.default.removeItem(atPath: tree.root + "/seed.flac")
            return tree.root
        }

        private static func waitForScan(_ client: MPDTestClient, songs count: Int) throws {
            let deadline = Date().addingTimeInterval(60 * Sanitizer.timeScale)
            while try client.command("stats")["songs"] != "\(count)" || client.command("status")["updating_db"] != nil {
                guard Date() < deadline else { throw LineClient.Failure(description: "the scan did not end") }
                usleep(50_000)
            }
        }

        /// The daemon on a library of `count` songs (`longLibrary`) with these `[mpd]` lines, once
        /// scanned. The songs' loudness is not measured meanwhile: its decoders' memory and CPU
        /// would blur what these tests weigh.
        private static func startOnLongLibrary(_ directory: TemporaryDirectory, count: Int, mpd: String) throws
            -> (DaemonProcess, MPDTestClient)
        {
            let root = try longLibrary(directory, count: count)
            let config = directory.path("tonearmd.toml")
            try "[library]\nmusic_directory = \"\(root)\"\nmeasure_loudness = false\n[mpd]\n\(mpd)\n"
                .write(toFile: config, atomically: true, encoding: .utf8)
            let daemon = try DaemonProcess(arguments: ["--device", "null", "--config", config])
            let client = try daemon.connectMPD(timeout: 20)
            try waitForScan(client, songs: count)
            return (daemon, client)
        }

        @Test func aListingOverTheOutputCapReachesASlowReaderWhole() throws {
            let directory = try TemporaryDirectory()
            defer { directory.remove() }
            // Some 7 MB of listing.
            let count = 8000
            // A cap of 1.5 MiB: the whole reply at once would pass it.
            let (daemon, client) = try Self.startOnLongLibrary(directory, count: count, mpd: "max_output_buffer_size = 1536")
            try withExtendedLifetime(daemon) {
                let before = try ProcessResources(pid: daemon.process.processIdentifier).residentKiB
                try client.connection.send(line: "listallinfo")
                // The client takes nothing for a while: the daemon must neither drop it nor
                // make the rest of the reply meanwhile.
                sleep(2)
                let waiting = try ProcessResources(pid: daemon.process.processIdentifier).residentKiB
                let reply = try client.reply(timeout: 60 * Sanitizer.timeScale)
                #expect(reply.ok, "\(reply.end)")
                #expect(reply.values("file").count == count)
                #expect(reply.values("directory").count == count / 100)
                let bytes = reply.lines.reduce(0) { $0 + $1.utf8.count + 1 }
                #expect(bytes > 5 << 20, "the listing is \(bytes) bytes")
                // What the daemon holds meanwhile: the socket's and the channel's buffers (about
                // 1 MiB), one part, and the database's reads, up to SQLite's page cache of the
                // reader (2 MiB, its default; `stats`, answered from memory, no longer fills it
                // first); not the listing. (A sanitizer's own allocator and shadow memory make
                // RSS say nothing about that.)
                if Sanitizer.active == nil {
                    #expect(
                        (waiting - before) * 1024 < bytes / 2 + 2 << 20,
                        "RSS grew by \(waiting - before) KiB while the client did not read (the listing: \(bytes / 1024) KiB)")
                }
            }
        }

        /// A client that takes a long listing slowly (128 KiB/s: what waits in the daemon's
        /// buffers after the last part takes seconds, many times `connection_timeout`) gets all
        /// of it: a client taking its reply is not silent. Once it has it all and says nothing,
        /// it is.
        @Test func aSlowReaderIsNotSilentWhileItTakesItsReply() throws {
            let directory = try TemporaryDirectory()
            defer { directory.remove() }
            // Some 2.5 MB of listing: more than the channel's high mark (1 MiB) and the socket hold.
            let count = 3000
            let (daemon, client) = try Self.startOnLongLibrary(directory, count: count, mpd: "connection_timeout = 1")
            try withExtendedLifetime(daemon) {
                try client.connection.send(line: "listallinfo")
                let fd = client.connection.fd
                var received = Data()
                var buffer = [UInt8](repeating: 0, count: 16 * 1024)
                let ending = Data("\nOK\n".utf8)
                let deadline = Date().addingTimeInterval(120 * Sanitizer.timeScale)
                while received.suffix(ending.count) != ending, Date() < deadline {
                    var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                    guard poll(&poller, 1, 1000) > 0 else { continue }
                    let got = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                    guard got > 0 else { break }  // closed by the daemon
                    received.append(contentsOf: buffer[0..<got])
                    usleep(125_000)  // at most 16 KiB each 1/8 s
                }
                let text = String(decoding: received, as: UTF8.self)
                #expect(
                    received.suffix(ending.count) == ending,
                    "the reply was cut after \(received.count) bytes: \(daemon.log.suffix(400))")
                #expect(text.components(separatedBy: "\nfile: ").count - 1 == count)
                #expect(received.count > 3 << 19, "the listing is \(received.count) bytes")
                // Once it has it all (and only then: the reply above is whole), it is silent.
                #expect(client.isClosed(timeout: 4 * Sanitizer.timeScale), "silent once it has its reply")
                #expect(daemon.log.components(separatedBy: "silent for").count - 1 == 1, "\(daemon.log.suffix(400))")
            }
        }
    }
}
