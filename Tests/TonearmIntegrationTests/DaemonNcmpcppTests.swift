import Foundation
import Testing
import TonearmTestSupport

#if canImport(Glibc)
    import Glibc
#endif

extension DaemonTests {
    /// Debian's ncmpcpp, unchanged, in a tmux pane of its own: its media library lists the
    /// library's artists, an artist's albums and songs, and its search engine finds a title.
    @Suite("Daemon's library in ncmpcpp", .serialized, .realDaemon(minutes: 2))
    struct DaemonNcmpcppTests {
        /// A tmux server on a socket of its own running one program in a 160×40 pane; stopped
        /// by the pane's PID and the server's.
        final class Pane {
            let socket: String
            private(set) var panePID: pid_t = 0

            init(socket: String, command: String) throws {
                self.socket = socket
                let started = try tmux(["new-session", "-d", "-s", "test", "-x", "160", "-y", "40", command])
                guard started.status == 0 else { throw LineClient.Failure(description: "tmux: \(started.output)") }
                let pid = try tmux(["display-message", "-p", "-t", "test", "#{pane_pid}"])
                panePID = pid_t(pid.output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
            }

            func keys(_ keys: String..., literal: Bool = false) throws {
                _ = try tmux(["send-keys", "-t", "test"] + (literal ? ["-l"] : []) + keys)
            }

            var screen: String { (try? tmux(["capture-pane", "-p", "-t", "test"]).output) ?? "" }

            /// Runs tmux with this pane's socket, spawned and reaped here: the client whose
            /// command starts the server is never seen to end by Foundation's `Process` (the
            /// server it forks keeps it from being reaped there), which would wait for ever.
            private func tmux(_ arguments: [String]) throws -> (status: Int32, output: String) {
                let output = socket + ".out"
                var actions = posix_spawn_file_actions_t()
                posix_spawn_file_actions_init(&actions)
                defer { posix_spawn_file_actions_destroy(&actions) }
                posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
                posix_spawn_file_actions_adddup2(&actions, 1, 2)
                posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
                let argv = (["/usr/bin/tmux", "-S", socket] + arguments).map { strdup($0) } + [nil]
                defer { argv.forEach { free($0) } }
                var pid: pid_t = 0
                guard posix_spawn(&pid, "/usr/bin/tmux", &actions, nil, argv, environ) == 0 else {
                    throw LineClient.Failure(description: "cannot start tmux")
                }
                var status: Int32 = 0
                let deadline = Date().addingTimeInterval(10)
                while waitpid(pid, &status, WNOHANG) == 0 {
                    guard Date() < deadline else {
                        kill(pid, SIGKILL)
                        _ = waitpid(pid, &status, 0)
                        throw LineClient.Failure(description: "tmux \(arguments.first ?? "") did not end")
                    }
                    usleep(5_000)
                }
                return ((status >> 8) & 0xFF, String(decoding: readWholeFile(output), as: UTF8.self))
            }

            /// Waits until the screen shows every one of `texts`.
            func waitFor(_ texts: String...) -> Bool {
                let deadline = Date().addingTimeInterval(15 * Sanitizer.timeScale)
                while Date() < deadline {
                    let shown = screen
                    if texts.allSatisfy({ shown.contains($0) }) { return true }
                    usleep(50_000)
                }
                return false
            }

            func stop() {
                if panePID > 0 { kill(panePID, SIGKILL) }
                panePID = 0
                _ = try? tmux(["kill-server"])
            }

            deinit { stop() }
        }

        @Test func theMediaLibraryAndTheSearchEngineShowTheLibrary() throws {
            let directory = try TemporaryDirectory()
            defer { directory.remove() }
            let tree = try MusicTree(
                at: directory.path("music"),
                [
                    .init("Alpha/One/01 First.flac", ["artist": "Alpha", "album": "One", "title": "First", "date": "2001"]),
                    .init("Béta/Zwölf/01 Café.flac", ["artist": "Béta", "album": "Zwölf", "title": "Café", "date": "2005"]),
                ])
            let config = directory.path("tonearmd.toml")
            try "[library]\nmusic_directory = \"\(tree.root)\"\n".write(toFile: config, atomically: true, encoding: .utf8)
            let daemon = try DaemonProcess(arguments: ["--device", "null", "--config", config])
            try withExtendedLifetime(daemon) {
                try DaemonLibraryTests.waitForScan(try daemon.connectMPD())
                try FileManager.default.createDirectory(atPath: directory.path("home"), withIntermediateDirectories: true)
                try "mpd_host = \"\(daemon.mpdSocketPath)\"\nncmpcpp_directory = \"\(directory.path("home"))\"\n"
                    .write(toFile: directory.path("ncmpcpp.cfg"), atomically: true, encoding: .utf8)
                let pane = try Pane(
                    socket: directory.path("tmux.sock"),
                    command: "HOME='\(directory.path("home"))' TERM=xterm /usr/bin/ncmpcpp -c '\(directory.path("ncmpcpp.cfg"))'")
                defer { pane.stop() }
                #expect(pane.waitFor("Playlist"), "ncmpcpp started: \(pane.screen)")

                // The media library: artists, then the first artist's album (with its date) and song.
                try pane.keys("4")
                #expect(pane.waitFor("Media library", "Alpha", "Béta", "(2001) One", "First"), "\(pane.screen)")
                try pane.keys("Down")
                #expect(pane.waitFor("(2005) Zwölf", "Café"), "\(pane.screen)")

                // The search engine: "CAF" in Any, case folded, finds the one song.
                try pane.keys("3")
                #expect(pane.waitFor("Search engine", "Any"), "\(pane.screen)")
                try pane.keys("Enter")
                try pane.keys("CAF", literal: true)
                try pane.keys("Enter")
                for _ in 0..<13 { try pane.keys("Down") }
                try pane.keys("Enter")
                #expect(pane.waitFor("Found 1 song", "Béta - Café"), "\(pane.screen)")
            }
        }
    }
}
