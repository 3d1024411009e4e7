import Foundation
import Testing
import TonearmTestSupport

#if canImport(Glibc)
    import Glibc
#endif

extension DaemonTests {
    /// systemd's protocols, driven by the real daemon and, for socket activation, systemd's own
    /// `systemd-socket-activate`; the test plays systemd's notify socket itself.
    @Suite("Daemon speaks systemd's protocols", .serialized, .realDaemon(minutes: 3))
    struct DaemonSystemdTests {
        /// READY=1 once the socket accepts, STATUS= with what plays, WATCHDOG=1 while healthy,
        /// STOPPING=1 at SIGTERM.
        @Test func readinessStatusWatchdogAndStopping() throws {
            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            let notify = try NotifyListener(path: dir.path("notify"))
            let daemon = try DaemonProcess(
                arguments: ["--device", "null", "--pace"],
                environment: ["NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "300000"])
            let ready = try notify.wait(for: "READY=1")
            #expect(ready.last?.contains("STATUS=idle") == true, "\(ready)")
            #expect(try daemon.connect().call("ping")["result"] as? String == "pong", "READY=1 came once the socket accepts")
            try notify.wait(for: "WATCHDOG=1")
            try notify.wait(for: "WATCHDOG=1", timeout: 1)
            let client = try daemon.connect()
            #expect(try client.call("load", ["url": Fixtures.path("tone.flac"), "play": true]).stateName == "playing")
            try notify.wait(for: "STATUS=playing: Tonearm – Test Tone")
            try notify.wait(for: "WATCHDOG=1", timeout: 1)
            kill(daemon.process.processIdentifier, SIGTERM)
            try notify.wait(for: "STOPPING=1")
            #expect(daemon.terminate() == 0)
        }

        /// A wedged output thread (a device write that never returns) stops the pings.
        @Test func theWatchdogStopsWhenTheOutputIsWedged() throws {
            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            let notify = try NotifyListener(path: dir.path("notify"))
            let device = try FaultDevice(control: ["stall_after 4410 600000"])
            defer { device.remove() }
            var environment = device.environment
            environment["NOTIFY_SOCKET"] = notify.path
            environment["WATCHDOG_USEC"] = "300000"
            let daemon = try DaemonProcess(arguments: ["--device", device.name], environment: environment)
            try notify.wait(for: "READY=1")
            try notify.wait(for: "WATCHDOG=1")
            #expect(try daemon.connect().call("load", ["url": Fixtures.path("tone.wav"), "play": true]).stateName == "playing")
            // The stall begins after 0.1 s of audio; once the daemon has seen it, no ping may come.
            let deadline = Date().addingTimeInterval(5)
            while !daemon.log.contains("pings stop"), Date() < deadline { usleep(20_000) }
            #expect(daemon.log.contains("pings stop"), "\(daemon.log)")
            while notify.next(timeout: 0) != nil {}
            var late: [String] = []
            while let message = notify.next(timeout: 1) { late.append(message) }
            #expect(!late.contains { $0.contains("WATCHDOG=1") }, "pinged while wedged: \(late)")
            kill(daemon.process.processIdentifier, SIGKILL)
        }

        /// Socket activation: systemd-socket-activate holds the sockets and starts the daemon on
        /// the first connection; the daemon serves the inherited sockets (the control socket and
        /// MPD's, named by `--fdname`) and leaves them in place.
        @Test func socketActivationServesTheInheritedSocket() throws {
            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            let socketPath = dir.path("control.sock")
            let mpdPath = dir.path("music.sock")
            let notify = try NotifyListener(path: dir.path("notify"))
            let activator = Process()
            activator.executableURL = URL(fileURLWithPath: "/usr/bin/systemd-socket-activate")
            // systemd-socket-activate passes on only the variables it is given: the sanitizers'
            // settings (LeakSanitizer's suppressions) must go through too.
            let passed = ["ASAN_OPTIONS", "LSAN_OPTIONS", "TSAN_OPTIONS"]
                .filter { ProcessInfo.processInfo.environment[$0] != nil }.flatMap { ["-E", $0] }
            activator.arguments =
                [
                    "-l", socketPath, "-l", mpdPath, "--fdname=control:mpd", "-E", "NOTIFY_SOCKET=\(notify.path)",
                    "-E", "STATE_DIRECTORY=\(dir.path("state"))",
                ] + passed
                + [DaemonProcess.binary(), "--device", "null", "--http", "off"]
            let log = dir.path("daemon.log")
            _ = FileManager.default.createFile(atPath: log, contents: nil)
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
            activator.standardOutput = handle
            activator.standardError = handle
            try activator.run()
            defer { if activator.isRunning { kill(activator.processIdentifier, SIGKILL) } }
            let connected = try #require(LineClient.waitingForSocket(socketPath), "the activator never listened")
            #expect(try connected.call("ping")["result"] as? String == "pong")
            try notify.wait(for: "READY=1")
            let mpd = try MPDTestClient(path: mpdPath)
            #expect(mpd.greeting == "OK MPD 0.23.5")
            #expect(try mpd.command("status")["state"] == "stop")
            #expect(!FileManager.default.fileExists(atPath: dir.path("mpd.sock")), "MPD's socket came from systemd, not bound beside")
            let text = try String(contentsOfFile: log, encoding: .utf8)
            #expect(text.contains("socket activation"), "\(text)")
            kill(activator.processIdentifier, SIGTERM)
            activator.waitUntilExit()
            let finalLog = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            #expect(activator.terminationStatus == 0, "\(finalLog)")
            #expect(Sanitizer.reports(in: finalLog).isEmpty, "\(finalLog)")
            for path in [socketPath, mpdPath] {
                var info = stat()
                #expect(
                    lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFSOCK,
                    "a socket the daemon did not create is left in place: \(path)")
            }
        }
    }
}
