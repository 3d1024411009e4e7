import Foundation
import Testing
import TonearmTestSupport

#if canImport(Glibc)
    import Glibc
#endif

extension DaemonTests {
    /// Access control (the unattended-running issue, §3): the socket's mode and group, peer
    /// credentials against the access lists (clients run as other users through util-linux's
    /// `setpriv`), and media roots.
    @Suite("Daemon lets in only whom it should", .serialized, .realDaemon(minutes: 3))
    struct DaemonAccessTests {
        private func daemon(_ dir: TemporaryDirectory, _ toml: String) throws -> DaemonProcess {
            let config = dir.path("tonearmd.toml")
            try toml.write(toFile: config, atomically: true, encoding: .utf8)
            return try DaemonProcess(arguments: ["--device", "null", "--pace", "--config", config])
        }

        /// Runs the built tonearmctl as `uid` (group `uid`, no other groups) against `socket`.
        private func tonearmctl(as uid: Int, _ socket: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
            let client = (DaemonProcess.binary() as NSString).deletingLastPathComponent + "/tonearmctl"
            return try runTool(
                "/usr/bin/setpriv", ["--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", client] + arguments,
                environment: ["TONEARM_SOCKET": socket, "PATH": "/usr/bin:/bin"])
        }

        @Test func theSocketGetsItsModeAndGroup() throws {
            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            let running = try daemon(dir, "[control]\nsocket_mode = \"0640\"\nsocket_group = \"nogroup\"\n")
            _ = try running.connect()
            var info = stat()
            #expect(stat(running.socketPath, &info) == 0)
            #expect(info.st_mode & 0o777 == 0o640, "mode \(String(info.st_mode & 0o777, radix: 8))")
            #expect(info.st_gid == getgrnam("nogroup").pointee.gr_gid)
        }

        @Test func peersAreLetInByTheAccessLists() throws {
            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            let running = try daemon(
                dir,
                """
                [control]
                socket_mode = "0666"
                allow_uids = [65533]
                read_gids = ["nogroup"]
                """)
            let root = try running.connect()
            #expect(try root.call("load", ["url": Fixtures.path("tone.wav")]).stateName == "ready", "root always may")
            let socket = running.socketPath

            // nobody (group nogroup) may read, not control.
            let status = try tonearmctl(as: 65534, socket, ["status"])
            #expect(status.status == 0 && status.output.contains("ready"), "\(status.output)")
            let pause = try tonearmctl(as: 65534, socket, ["play"])
            #expect(pause.status != 0 && pause.output.contains("permission denied"), "\(pause.output)")
            #expect(try root.call("status").stateName == "ready", "the refused play did nothing")

            // A listed uid may control.
            let play = try tonearmctl(as: 65533, socket, ["play"])
            #expect(play.status == 0, "\(play.output)")
            #expect(try root.call("status").stateName == "playing")

            // Anyone else is refused and disconnected, and the refusal is logged with uid and pid.
            let other = try tonearmctl(as: 65532, socket, ["status"])
            #expect(other.status != 0 && other.output.contains("permission denied: uid 65532"), "\(other.output)")
            #expect(running.log.contains("uid=65532") && running.log.contains("pid="), "\(running.log)")
            #expect(try root.call("ping")["result"] as? String == "pong")
        }

        /// A browser has no credentials: with access lists or an MPD password, a web remote
        /// without a password would let every local user past them. The daemon refuses to start
        /// and says why; with `http.password` it starts.
        @Test func theWebRemoteIsNoWayPastTheAccessRules() throws {
            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            for (toml, names) in [("[control]\nallow_uids = [0]\n", "control.allow_uids"), ("[mpd]\npassword = \"x\"\n", "mpd.password")] {
                let config = dir.path("tonearmd.toml")
                try (toml + "[http]\nbind = \"127.0.0.1:\(try freeTCPPort())\"\n").write(toFile: config, atomically: true, encoding: .utf8)
                let refused = try DaemonProcess(arguments: ["--device", "null", "--config", config], webRemote: true)
                refused.process.waitUntilExit()
                #expect(refused.process.terminationStatus != 0)
                #expect(refused.log.contains(names) && refused.log.contains("http.password"), "\(refused.log)")
            }
            let config = dir.path("tonearmd.toml")
            try "[control]\nallow_uids = [0]\n[http]\nbind = \"127.0.0.1:\(try freeTCPPort())\"\npassword = \"p\"\n"
                .write(toFile: config, atomically: true, encoding: .utf8)
            let running = try DaemonProcess(arguments: ["--device", "null", "--config", config], webRemote: true)
            #expect(try running.connect().call("ping")["result"] as? String == "pong")
        }

        @Test func mediaOutsideTheRootsIsRefusedBeforeOpening() throws {
            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            let root = dir.path("music")
            try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: Fixtures.path("tone.wav"), toPath: root + "/in.wav")
            try FileManager.default.copyItem(atPath: Fixtures.path("tone.wav"), toPath: dir.path("out.wav"))
            try FileManager.default.createSymbolicLink(atPath: root + "/escape.wav", withDestinationPath: dir.path("out.wav"))
            try "in.wav\n../out.wav\n".write(toFile: root + "/mixed.m3u", atomically: true, encoding: .utf8)
            try "music/in.wav\n".write(toFile: dir.path("outside.m3u"), atomically: true, encoding: .utf8)
            let running = try daemon(dir, "[input]\nroots = [\"\(root)\"]\n")
            let client = try running.connect()

            #expect(try client.call("load", ["url": root + "/in.wav"]).stateName == "ready")
            #expect(try client.call("load", ["url": root + "/../music/in.wav"]).stateName == "ready")
            for outside in [dir.path("out.wav"), root + "/escape.wav", root + "/../out.wav", "/etc/passwd"] {
                let answer = try client.call("load", ["url": outside])
                #expect(
                    answer.errorCode == -32001 && answer.errorData?["kind"] as? String == "permission_denied",
                    "\(outside): \(answer)")
                #expect(answer.errorMessage?.contains("input.roots") == true)
            }
            for playlist in [root + "/mixed.m3u", dir.path("outside.m3u")] {
                let answer = try client.call("add", ["urls": [playlist]])
                #expect(answer.errorData?["kind"] as? String == "permission_denied", "\(playlist): \(answer)")
            }
            let queue = try #require(client.call("queue").result?["items"] as? [[String: Any]])
            #expect(queue.count == 1, "nothing refused was queued: \(queue)")
        }
    }
}
