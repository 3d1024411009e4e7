import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Debian's real MPD, the peer whose answers Tonearm's MPD side is held to: on a Unix socket of
/// its own, a null output, a database of `musicDirectory` built at start (`update` waited for),
/// stored playlists in a directory of its own.
/// Its process is stopped by PID in `stop()`.
package final class DebianMPD {
    package static let binary = "/usr/bin/mpd"
    package let socket: String
    private let dir: TemporaryDirectory
    private let server: Process

    package init(musicDirectory: String) throws {
        guard FileManager.default.isExecutableFile(atPath: Self.binary) else {
            throw LineClient.Failure(description: "no \(Self.binary): run scripts/setup-debian.sh --tests")
        }
        dir = try TemporaryDirectory()
        socket = dir.path("mpd.sock")
        let config = dir.path("mpd.conf")
        try FileManager.default.createDirectory(atPath: dir.path("playlists"), withIntermediateDirectories: true)
        try """
        music_directory "\(musicDirectory)"
        playlist_directory "\(dir.path("playlists"))"
        db_file "\(dir.path("database"))"
        state_file "\(dir.path("state"))"
        log_file "\(dir.path("mpd.log"))"
        bind_to_address "\(socket)"
        audio_output {
            type "null"
            name "null"
        }

        """.write(toFile: config, atomically: true, encoding: .utf8)
        server = Process()
        server.executableURL = URL(fileURLWithPath: Self.binary)
        server.arguments = ["--no-daemon", "--stderr", config]
        server.standardOutput = FileHandle.nullDevice
        server.standardError = FileHandle.nullDevice
        try server.run()
        do {
            let client = try connect()
            _ = try client.command("update")
            // The scan is done once `status` no longer names an update job.
            let deadline = Date().addingTimeInterval(20)
            while try client.command("status")["updating_db"] != nil {
                guard Date() < deadline else { throw LineClient.Failure(description: "mpd's update did not end: \(log)") }
                usleep(20_000)
            }
        } catch {
            stop()
            throw error
        }
    }

    deinit { stop() }

    package var log: String { (try? String(contentsOfFile: dir.path("mpd.log"), encoding: .utf8)) ?? "" }

    package func connect() throws -> MPDTestClient { try MPDTestClient(path: socket) }

    package func stop() {
        if server.isRunning {
            kill(server.processIdentifier, SIGKILL)
            server.waitUntilExit()
        }
        dir.remove()
    }
}
