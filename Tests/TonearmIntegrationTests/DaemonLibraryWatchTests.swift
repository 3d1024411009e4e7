import Foundation
import Testing
import TonearmTestSupport

extension DaemonTests {
    /// The library follows the music directory as it changes (inotify), and where the kernel
    /// allows no more watches, by whole scans at `library.rescan_interval_s`.
    @Suite("Daemon's library follows the music directory", .serialized, .timeLimit(.minutes(3)))
    struct DaemonLibraryWatchTests {
        /// The issue's bound: a change is in the database within 2 s (longer under a sanitizer).
        static let within = 2.0 * Sanitizer.timeScale

        /// Waits until `lsinfo uri`'s files are `expected`; fails with what it last saw.
        private func waitForFiles(_ client: MPDTestClient, _ uri: String, _ expected: [String], within seconds: Double = within,
                                  sourceLocation: SourceLocation = #_sourceLocation) throws {
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

        @Test func addedRenamedAndDeletedFilesAndDirectoriesAreSeen() throws {
            let directory = try TemporaryDirectory()
            defer { directory.remove() }
            let tree = try MusicTree(at: directory.path("music"), DaemonLibraryTests.songs)
            let daemon = try DaemonProcess(arguments: ["--device", "null", "--config", try config(directory, tree.root)])
            try withExtendedLifetime(daemon) {
                let client = try daemon.connectMPD()
                try DaemonLibraryTests.waitForScan(client)
                let watcher = try daemon.connectMPD()
                try watcher.connection.send(line: "idle database")

                try tree.add(.init("Alpha/One/03 Third.flac", ["artist": "Alpha", "title": "Added"]))
                try waitForFiles(client, "Alpha/One", ["Alpha/One/01 First.flac", "Alpha/One/02 Second.flac", "Alpha/One/03 Third.flac"])
                let news = try watcher.reply(timeout: Self.within)
                #expect(news.values("changed") == ["database"], "\(news)")
                #expect(try client.command("find title Added").values("file") == ["Alpha/One/03 Third.flac"])

                try FileManager.default.moveItem(atPath: tree.root + "/Alpha/One/03 Third.flac", toPath: tree.root + "/Alpha/Two/03 Moved.flac")
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

                try FileManager.default.removeItem(atPath: tree.root + "/Delta")
                let deadline = Date().addingTimeInterval(Self.within)
                while try client.command("lsinfo Delta").ack == nil, Date() < deadline { usleep(20_000) }
                #expect(try client.command("lsinfo Delta").ack != nil, "Delta is gone")
                #expect(try client.command("find title Deep").values("file").isEmpty)
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
                try waitForFiles(client, "Alpha/One", ["Alpha/One/01 First.flac", "Alpha/One/02 Second.flac", "Alpha/One/03 Third.flac"],
                                 within: 3 * Self.within)
                #expect(daemon.log.components(separatedBy: "max_user_watches").count - 1 == 1, "\(daemon.log)")
            }
        }
    }
}
