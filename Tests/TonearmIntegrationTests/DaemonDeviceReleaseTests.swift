import Foundation
import Testing
import TonearmTestSupport

extension DaemonTests {
    /// `output.release_after_s` and the `on_open`/`on_close` hooks, on the real daemon: the
    /// capture device counts its opens (`Capture`), and a hook script writes each run to a file.
    @Suite("Daemon lets the device sleep", .serialized, .realDaemon(minutes: 3))
    struct DaemonDeviceReleaseTests {
        typealias Capture = DaemonGaplessTests.Capture

        /// The capture device, pacing at `speed`, and a config with `output` lines.
        private func start(_ capture: Capture, speed: Double = 8, output: String) throws -> (DaemonProcess, LineClient, LineClient) {
            let config = capture.dir.path("tonearmd.toml")
            try "[output]\n\(output)\n".write(toFile: config, atomically: true, encoding: .utf8)
            let daemon = try DaemonProcess(arguments: ["--device", capture.device, "--pace", "--speed", "\(speed)", "--config", config])
            let client = try daemon.connect()
            let watcher = try daemon.connect()
            #expect(try watcher.call("subscribe", ["events": ["transition"]]).result != nil)
            return (daemon, client, watcher)
        }

        /// Hook lines that record "open"/"close" in `hooks.log` (argv, no shell of ours: the
        /// script is the program's argument).
        private func recordingHooks(_ capture: Capture) throws -> String {
            let script = capture.dir.path("hook.sh")
            try "echo \"$1\" >> '\(capture.dir.path("hooks.log"))'\n".write(toFile: script, atomically: true, encoding: .utf8)
            return "on_open = [\"/bin/sh\", \"\(script)\", \"open\"]\non_close = [\"/bin/sh\", \"\(script)\", \"close\"]"
        }

        private func hookRuns(_ capture: Capture) -> [String] {
            ((try? String(contentsOfFile: capture.dir.path("hooks.log"), encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        }

        private func waitForHooks(_ capture: Capture, _ runs: [String]) throws {
            let deadline = Date().addingTimeInterval(5 * Sanitizer.timeScale)
            while hookRuns(capture) != runs && Date() < deadline { usleep(10_000) }
            #expect(hookRuns(capture) == runs)
        }

        private static func deviceOpen(_ status: [String: Any]) -> Bool? { (status["output"] as? [String: Any])?["open"] as? Bool }

        /// SIGTERM while `on_open` runs before an open that never returns (a FIFO nobody reads):
        /// the daemon waits for the hook (not for the open), then runs `on_close`, in that order.
        @Test func aShutdownDuringAStuckOpenRunsTheHooksInOrder() throws {
            let capture = try Capture()
            defer { capture.dir.remove() }
            let fifo = capture.dir.path("out.fifo")
            #expect(mkfifo(fifo, 0o600) == 0)
            let script = capture.dir.path("hook.sh")
            try "if [ \"$1\" = open ]; then sleep 0.5; fi\necho \"$1\" >> '\(capture.dir.path("hooks.log"))'\n"
                .write(toFile: script, atomically: true, encoding: .utf8)
            let config = capture.dir.path("tonearmd.toml")
            try "[output]\non_open = [\"/bin/sh\", \"\(script)\", \"open\"]\non_close = [\"/bin/sh\", \"\(script)\", \"close\"]\n"
                .write(toFile: config, atomically: true, encoding: .utf8)
            let daemon = try DaemonProcess(arguments: [
                "--device", "file:'\(fifo)',raw", "--open-timeout-ms", "5000",
                "--no-wait-for-device", "--config", config,
            ])
            let client = try daemon.connect()
            try client.send(line: #"{"jsonrpc":"2.0","id":1,"method":"load","params":{"url":"\#(Fixtures.path("tone.wav"))","play":true}}"#)
            usleep(150_000)
            let started = Date()
            #expect(daemon.terminate(timeout: 10) == 0)
            #expect(Date().timeIntervalSince(started) < 3, "the stuck open is not waited for")
            #expect(hookRuns(capture) == ["open", "close"])
        }

        @Test func theDeviceSleepsAfterTheEndAndWakesForTheNextPlay() throws {
            let capture = try Capture()
            defer { capture.dir.remove() }
            let (daemon, client, watcher) = try start(capture, output: "release_after_s = 2\n" + (try recordingHooks(capture)))
            #expect(Self.deviceOpen(try #require(client.call("status").result)) == false, "not open before the first play")
            let added = try client.call("add", ["urls": [Fixtures.path("tone.wav")], "play": true])
            #expect(added.stateName == "playing", "\(added)")
            _ = try readEvents(watcher, timeout: 30 * Sanitizer.timeScale) { $0.transitionTo == "ended" }
            let ended = Date()
            #expect(Self.deviceOpen(try #require(client.call("status").result)) == true, "still open just after the end")
            _ = try waitForStatus(client, timeout: 10 * Sanitizer.timeScale) { Self.deviceOpen($0) == false }
            let released = Date().timeIntervalSince(ended)
            #expect(released >= 1.9 && released < 2 + 3 * Sanitizer.timeScale, "released \(released) s after the end")
            // The closing hook runs on the opener thread just after the close.
            try waitForHooks(capture, ["open", "close"])
            #expect(capture.opens == 1)

            let again = try client.call("play", ["id": try #require((added.result?["items"] as? [[String: Any]])?.first?["id"] as? Int)])
            #expect(again.stateName == "playing", "\(again)")
            _ = try readEvents(watcher, timeout: 30 * Sanitizer.timeScale) { $0.transitionTo == "ended" }
            #expect(capture.opens == 2, "opened again for the play")
            let tone = try Fixtures.wavPCM("tone.wav")
            #expect(capture.settled() == tone + tone, "both plays whole")
            // Stopping the daemon closes the device and switches the amplifier off.
            #expect(daemon.terminate() == 0)
            #expect(hookRuns(capture) == ["open", "close", "open", "close"])
            let log = daemon.log
            #expect(log.contains("output.on_open `/bin/sh \(capture.dir.path("hook.sh")) open` exited 0"), "\(log)")
            #expect(log.contains("output device released"), "\(log)")
        }

        /// Paused long enough, the device is released; play opens it again and goes on from the
        /// sample it paused at. The `file:` capture keeps what the device was handed (its close
        /// writes the frames it held unheard too), so it is the file up to what was handed over,
        /// then the file again from the paused position: nothing heard is lost. With the pause's
        /// fades, the device held nothing unheard: the file is the track with the two fades.
        @Test(arguments: [false, true])
        func aLongPauseReleasesTheDeviceAndLosesNoSample(fades: Bool) throws {
            let capture = try Capture()
            defer { capture.dir.remove() }
            let output = "release_after_s = 0.5\nfade_on_pause = \(fades)\n" + (try recordingHooks(capture))
            let (daemon, client, watcher) = try start(capture, speed: 2, output: output)
            defer { withExtendedLifetime(daemon) {} }
            #expect(try client.call("add", ["urls": [Fixtures.path("tone.wav")], "play": true]).stateName == "playing")
            _ = try waitForStatus(client) { ($0["position"] as? Double ?? 0) > 0.8 }
            let paused = try client.call("pause")
            #expect(paused.stateName == "paused", "\(paused)")
            let before = try #require((fades ? waitForHeldPosition(client) : client.call("status").result)?["position"] as? Double)
            let asleep = try waitForStatus(client, timeout: 10 * Sanitizer.timeScale) { Self.deviceOpen($0) == false }
            #expect(asleep["position"] as? Double == before, "the position holds through the release")
            try waitForHooks(capture, ["open", "close"])
            let handed = capture.settled().count
            let resume = Int((before * 44100).rounded()) * 4
            // A pause that fades is heard to its end before the device pauses: it held nothing more.
            #expect(fades ? resume == handed : resume < handed, "paused at \(resume) bytes, \(handed) handed to the device")
            #expect(try client.call("play").stateName == "playing")
            _ = try readEvents(watcher, timeout: 30 * Sanitizer.timeScale) { $0.transitionTo == "ended" }
            #expect(capture.opens == 2)
            let tone = try Fixtures.wavPCM("tone.wav")
            let pcm = capture.settled()
            #expect(pcm.count == handed + tone.count - resume, "\(pcm.count) bytes")
            if fades {
                let check = PauseFadeCheck(
                    capture: DaemonSleepTests.samples(pcm), source: DaemonSleepTests.samples(tone),
                    pauseFrame: resume / 4, rate: 44100, channels: 2)
                #expect(check.holds, "faded out, released, and faded in from the same sample: \(check)")
            } else {
                #expect(
                    pcm.prefix(handed) == tone.prefix(handed) && pcm.dropFirst(handed) == tone.dropFirst(resume),
                    "the file to what was handed over, then from where it paused")
            }
            #expect(hookRuns(capture) == ["open", "close", "open"])
        }

        /// A hook that fails, one that cannot start and one that hangs are logged; none of them
        /// keeps the music from playing, and the hanging one is killed at `hook_timeout_ms`.
        @Test func failingAndHangingHooksNeverStopPlayback() throws {
            let capture = try Capture()
            defer { capture.dir.remove() }
            let (daemon, client, watcher) = try start(
                capture,
                output: """
                    release_after_s = 0
                    hook_timeout_ms = 300
                    on_open = ["/bin/sh", "-c", "exit 3"]
                    on_close = ["/bin/sleep", "30"]
                    """)
            defer { withExtendedLifetime(daemon) {} }
            let added = try client.call("add", ["urls": [Fixtures.path("tone.wav")], "play": true])
            #expect(added.stateName == "playing", "\(added)")
            _ = try readEvents(watcher, timeout: 30 * Sanitizer.timeScale) { $0.transitionTo == "ended" }
            _ = try waitForStatus(client, timeout: 10 * Sanitizer.timeScale) { Self.deviceOpen($0) == false }
            // The next open stops the hanging close hook (it is moot now), and plays.
            let started = Date()
            let again = try client.call("play", ["id": try #require((added.result?["items"] as? [[String: Any]])?.first?["id"] as? Int)])
            #expect(again.stateName == "playing", "\(again)")
            _ = try readEvents(watcher, timeout: 30 * Sanitizer.timeScale) { $0.transitionTo == "ended" }
            #expect(Date().timeIntervalSince(started) < 5 * Sanitizer.timeScale)
            let tone = try Fixtures.wavPCM("tone.wav")
            #expect(capture.settled() == tone + tone)
            let deadline = Date().addingTimeInterval(5 * Sanitizer.timeScale)
            while !daemon.log.contains("was stopped: the device was wanted again") && Date() < deadline { usleep(20_000) }
            let log = daemon.log
            #expect(log.contains("output.on_open `/bin/sh -c exit 3` exited 3"), "\(log)")
            #expect(log.contains("output.on_close `/bin/sleep 30` was stopped: the device was wanted again"), "\(log)")
            // Stopped a moment after a release: the closing hook still running is finished first.
            #expect(daemon.terminate() == 0)
            #expect(Date().timeIntervalSince(started) < 10 * Sanitizer.timeScale, "no hook outlived the daemon")
        }

        /// A closing hook and an opening one that both hang: a play right after a release waits
        /// for the opening one alone (the closing one is stopped), not for both timeouts.
        @Test func aPlayWaitsForOneHangingHookNotTwo() throws {
            let capture = try Capture()
            defer { capture.dir.remove() }
            let (daemon, client, watcher) = try start(
                capture,
                output: """
                    release_after_s = 0
                    hook_timeout_ms = 3000
                    on_open = ["/bin/sleep", "30"]
                    on_close = ["/bin/sleep", "30"]
                    """)
            defer { withExtendedLifetime(daemon) {} }
            let added = try client.call("add", ["urls": [Fixtures.path("tone.wav")], "play": true])
            _ = try readEvents(watcher, timeout: 30 * Sanitizer.timeScale) { $0.transitionTo == "ended" }
            _ = try waitForStatus(client, timeout: 10 * Sanitizer.timeScale) { Self.deviceOpen($0) == false }
            let started = Date()
            _ = try client.call("play", ["id": try #require((added.result?["items"] as? [[String: Any]])?.first?["id"] as? Int)])
            _ = try readEvents(watcher, timeout: 30 * Sanitizer.timeScale) { $0.transitionTo == "ended" }
            let took = Date().timeIntervalSince(started)
            // 3 s for the opening hook, 3/8 s of audio; both hooks' timeouts were 6 s and more.
            #expect(took < 3 + 1.5 * Sanitizer.timeScale, "played after \(took) s")
        }

        @Test func aHookThatCannotStartIsLogged() throws {
            let capture = try Capture()
            defer { capture.dir.remove() }
            let (daemon, client, watcher) = try start(capture, output: "on_open = [\"/nonexistent/amp\", \"on\"]")
            defer { withExtendedLifetime(daemon) {} }
            #expect(try client.call("add", ["urls": [Fixtures.path("tone.wav")], "play": true]).stateName == "playing")
            _ = try readEvents(watcher, timeout: 30 * Sanitizer.timeScale) { $0.transitionTo == "ended" }
            #expect(capture.settled() == (try Fixtures.wavPCM("tone.wav")))
            #expect(daemon.log.contains("output.on_open `/nonexistent/amp on` could not start: No such file or directory"), "\(daemon.log)")
        }

        /// `-1` keeps the device open for good: after the end and after a stop.
        @Test func minusOneKeepsTheDeviceOpen() throws {
            let capture = try Capture()
            defer { capture.dir.remove() }
            let (daemon, client, watcher) = try start(capture, output: "release_after_s = -1")
            defer { withExtendedLifetime(daemon) {} }
            #expect(try client.call("add", ["urls": [Fixtures.path("tone.wav")], "play": true]).stateName == "playing")
            _ = try readEvents(watcher, timeout: 30 * Sanitizer.timeScale) { $0.transitionTo == "ended" }
            _ = try client.call("stop")
            usleep(1_500_000)
            let status = try #require(client.call("status").result)
            #expect(
                Self.deviceOpen(status) == true && (status["output"] as? [String: Any])?["release_after_s"] as? Double == -1,
                "\(status)")
            #expect(capture.opens == 1)
        }
    }
}
