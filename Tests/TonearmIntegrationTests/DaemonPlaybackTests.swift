import Foundation
import Testing
import TonearmTestSupport

extension DaemonTests {
    /// The real tonearmd process, the ALSA `file:` device, and the PCM that came out.
    @Suite("Daemon playback end to end", .serialized, .realDaemon(minutes: 1))
    struct DaemonPlaybackTests {
        private func startDaemon(_ extra: [String] = []) throws -> (DaemonProcess, LineClient) {
            let daemon = try DaemonProcess(arguments: extra)
            return (daemon, try daemon.connect())
        }

        @Test(arguments: ["tone.wav", "tone.flac"])
        func playsToTheEndBitExact(_ fixture: String) throws {
            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            let daemon = try DaemonProcess(arguments: ["--device", dir.fileDevice("out.raw")])
            let client = try daemon.connect()
            let load = try client.call("load", ["url": Fixtures.path(fixture)])
            #expect(load.stateName == "ready", "\(load)")
            let media = try #require(load.result?["media"] as? [String: Any])
            #expect(media["sample_rate"] as? Int == 44100 && media["channels"] as? Int == 2)
            #expect((media["tags"] as? [String: Any])?["title"] as? String == "Test Tone")
            let play = try client.call("play")
            #expect(play.result?["changed"] as? Bool == true)
            _ = try waitForStatus(client) { $0.name == "ended" }
            #expect(try Data(contentsOf: URL(fileURLWithPath: dir.path("out.raw"))) == (try Fixtures.wavPCM("tone.wav")))
        }

        @Test(arguments: ["tone.mp3", "tone.ogg", "tone.opus", "tone.m4a", "video.mp4"])
        func lossyAndVideoFilesPlayToTheEnd(_ fixture: String) throws {
            let (daemon, client) = try startDaemon(["--device", "null"])
            defer { withExtendedLifetime(daemon) {} }
            let load = try client.call("load", ["url": "file://" + Fixtures.path(fixture), "play": true])
            #expect(load.stateName == "playing", "\(load)")
            let ended = try waitForStatus(client) { $0.name == "ended" }
            let duration = try #require(ended["duration"] as? Double)
            #expect(abs((ended["position"] as? Double ?? 0) - duration) < 0.1)
        }

        /// `pause` and `play` mid-track: the position holds while paused and nothing is lost or
        /// repeated. By default the pause fades out over 5 ms and play fades in from the same
        /// sample; with `--no-pause-fade` the capture is the track sample for sample.
        @Test(arguments: [true, false])
        func pauseAndResumeMidTrackWithPacing(fades: Bool) throws {
            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            let daemon = try DaemonProcess(
                arguments: ["--device", dir.fileDevice("out.raw"), "--pace", "--speed", "3"]
                    + (fades ? [] : ["--no-pause-fade"]))
            let client = try daemon.connect()
            #expect(try client.call("load", ["url": Fixtures.path("tone.flac"), "play": true]).stateName == "playing")
            _ = try waitForStatus(client) { ($0["position"] as? Double ?? 0) > 1.0 }
            let pause = try client.call("pause")
            #expect(pause.stateName == "paused" && pause.result?["changed"] as? Bool == true)
            let unchanged = try client.call("pause")
            #expect(unchanged.result?["changed"] as? Bool == false, "pause while paused: accepted, nothing changed")
            if fades { _ = try waitForHeldPosition(client) }
            let first = try client.call("status").result?["position"] as? Double ?? -1
            usleep(300_000)
            let second = try client.call("status").result?["position"] as? Double ?? -2
            #expect(first == second && first > 1.0 && first < 2.9, "position holds while paused: \(first) vs \(second)")
            #expect(try client.call("play").stateName == "playing")
            _ = try waitForStatus(client) { $0.name == "ended" }
            let capture = try Data(contentsOf: URL(fileURLWithPath: dir.path("out.raw")))
            let source = try Fixtures.wavPCM("tone.wav")
            #expect(capture.count == source.count, "nothing lost or repeated across the pause")
            if fades {
                let check = PauseFadeCheck(
                    capture: samples(capture), source: samples(source),
                    pauseFrame: Int((first * 44_100).rounded()), rate: 44_100, channels: 2)
                #expect(check.holds, "\(check)")
            } else {
                #expect(capture == source, "sample for sample across the pause")
            }
        }

        /// A device that can take back what it holds (ALSA's file plugin, paced, its buffer
        /// holding all the pace writes ahead): the pause fades out from just after what is heard,
        /// so it stands within 25 ms of where playback was when it was asked, not after the
        /// 350 ms the device holds; the capture is still the track with its two fades.
        @Test(arguments: ["tone.flac", "tone.mp3", "tone.ogg"])
        func aPauseIsHeardWithin25Milliseconds(_ fixture: String) throws {
            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            // 16-bit on the device, whatever the decoder makes, so the captures compare as samples.
            let s16 = dir.path("s16.toml")
            try "[output]\nformat = \"s16\"\n".write(toFile: s16, atomically: true, encoding: .utf8)
            let daemon = try DaemonProcess(arguments: [
                "--device", dir.fileDevice("out.raw"), "--pace", "--buffer-ms", "500",
                "--config", s16,
            ])
            let client = try daemon.connect()
            #expect(try client.call("load", ["url": Fixtures.path(fixture), "play": true]).stateName == "playing")
            _ = try waitForStatus(client) { ($0["position"] as? Double ?? 0) > 1.0 }
            let asked = Date()
            let before = try #require(try client.call("status").result?["position"] as? Double)
            #expect(try client.call("pause").stateName == "paused")
            let answered = Date().timeIntervalSince(asked)
            let stands = try #require(try waitForHeldPosition(client)["position"] as? Double)
            // The pause can stand no earlier than the status read, and no later than 25 ms after
            // the reply (the round trips are the test's, not the pause's).
            #expect(
                stands >= before && stands - before <= 0.025 + answered,
                "asked at \(before) s, stands at \(stands) s, \(answered * 1000) ms of round trips")
            #expect(try client.call("play").stateName == "playing")
            _ = try waitForStatus(client) { $0.name == "ended" }
            let capture = try Data(contentsOf: URL(fileURLWithPath: dir.path("out.raw")))
            let reference = dir.path("reference.raw")
            let daemonAlone = try DaemonProcess(arguments: ["--device", dir.fileDevice("reference.raw"), "--config", s16])
            let alone = try daemonAlone.connect()
            #expect(try alone.call("load", ["url": Fixtures.path(fixture), "play": true]).stateName == "playing")
            _ = try waitForStatus(alone) { $0.name == "ended" }
            let source = try Data(contentsOf: URL(fileURLWithPath: reference))
            #expect(capture.count == source.count, "nothing lost or repeated across the pause")
            let check = PauseFadeCheck(
                capture: samples(capture), source: samples(source),
                pauseFrame: Int((stands * 44_100).rounded()), rate: 44_100, channels: 2)
            #expect(check.holds, "\(check)")
        }

        private func samples(_ data: Data) -> [Int16] { data.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) } }

        @Test(arguments: [1.25, 2.0004])
        func seekLandsOnTheExactSample(_ target: Double) throws {
            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            let daemon = try DaemonProcess(arguments: ["--device", dir.fileDevice("out.raw")])
            let client = try daemon.connect()
            #expect(try client.call("load", ["url": Fixtures.path("tone.wav")]).stateName == "ready")
            let seek = try client.call("seek", ["position": target])
            #expect(seek.stateName == "paused", "seek from ready lands paused: \(seek)")
            let sample = Int((target * 44100).rounded())
            #expect(seek.result?["position"] as? Double == Double(sample) / 44100)
            #expect(try client.call("play").stateName == "playing")
            _ = try waitForStatus(client) { $0.name == "ended" }
            let reference = try Fixtures.wavPCM("tone.wav")
            #expect(
                try Data(contentsOf: URL(fileURLWithPath: dir.path("out.raw"))) == reference.subdata(in: sample * 4..<reference.count),
                "the first sample played is sample \(sample)")
        }

        @Test func relativeSeekWhilePlayingAndStop() throws {
            let (daemon, client) = try startDaemon(["--device", "null", "--pace", "--speed", "2"])
            defer { withExtendedLifetime(daemon) {} }
            #expect(try client.call("load", ["url": Fixtures.path("tone.wav"), "play": true, "start": 0.5]).stateName == "playing")
            let seek = try client.call("seek", ["position": 1.0, "relative": true])
            #expect(seek.stateName == "playing", "\(seek)")
            let position = try #require(seek.result?["position"] as? Double)
            #expect(position >= 1.5 && position < 2.0)
            let stop = try client.call("stop")
            #expect(stop.stateName == "idle" && stop.result?["changed"] as? Bool == true)
            let status = try client.call("status").result
            #expect(status?.name == "idle" && status?["media"] is NSNull)
        }

        @Test(arguments: [
            ("empty.wav", "unsupported_format"), ("notmedia.mp3", "unsupported_format"),
            ("headeronly.wav", "unsupported_format"), ("missing.ogg", "file_not_found"),
        ])
        func brokenFilesFailClearlyAndTheDaemonKeepsServing(_ fixture: String, _ kind: String) throws {
            let (daemon, client) = try startDaemon(["--device", "null"])
            let load = try client.call("load", ["url": Fixtures.path(fixture)])
            #expect(load.errorCode == -32001, "\(load)")
            #expect(load.errorData?["kind"] as? String == kind)
            #expect(load.errorMessage?.contains(fixture) == true, "the reason names the file: \(load)")
            let status = try client.call("status").result
            #expect(status?.name == "failed")
            #expect(((status?["state"] as? [String: Any])?["error"] as? [String: Any])?["kind"] as? String == kind)
            #expect(try client.call("ping")["result"] as? String == "pong")
            #expect(try client.call("load", ["url": Fixtures.path("tone.mp3")]).stateName == "ready")
            #expect(daemon.process.isRunning)
        }

        @Test func truncatedFilePlaysWhatIsThere() throws {
            let (daemon, client) = try startDaemon(["--device", "null"])
            defer { withExtendedLifetime(daemon) {} }
            #expect(try client.call("load", ["url": Fixtures.path("truncated.mp3"), "play": true]).stateName == "playing")
            let ended = try waitForStatus(client) { $0.name == "ended" || $0.name == "failed" }
            #expect(ended.name == "ended")
            #expect((ended["position"] as? Double ?? 0) > 0.5)
        }

        @Test func missingDeviceIsReportedAndTheDaemonKeepsServing() throws {
            let (daemon, client) = try startDaemon(["--device", "hw:77,0", "--no-wait-for-device"])
            let load = try client.call("load", ["url": Fixtures.path("tone.wav"), "play": true])
            #expect(load.errorCode == -32001)
            #expect(load.errorData?["kind"] as? String == "device_unavailable")
            #expect(load.errorData?["recoverable"] as? Bool == true)
            #expect(load.errorMessage?.contains("hw:77,0") == true)
            // retry is allowed (recoverable) and fails the same way while the device is still missing.
            #expect(try client.call("retry").errorData?["kind"] as? String == "device_unavailable")
            #expect(try client.call("ping")["result"] as? String == "pong")
            #expect(daemon.process.isRunning)
        }
    }
}
