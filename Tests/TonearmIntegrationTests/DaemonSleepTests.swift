import Foundation
import Testing
import TonearmTestSupport

extension DaemonTests {
    /// The sleep timer on the real daemon, heard through the `file:` capture (`Capture`).
    @Suite("Daemon sleep timer", .serialized, .realDaemon(minutes: 3))
    struct DaemonSleepTests {
        typealias Capture = DaemonGaplessTests.Capture
        static let rate = 44100

        private func start(_ capture: Capture, speed: Double) throws -> (DaemonProcess, LineClient, LineClient) {
            let daemon = try DaemonProcess(arguments: ["--device", capture.device, "--pace", "--speed", "\(speed)"])
            let client = try daemon.connect()
            let watcher = try daemon.connect()
            #expect(try watcher.call("subscribe", ["events": ["transition"]]).result != nil)
            return (daemon, client, watcher)
        }

        /// A 16-bit stereo sine of `seconds`, and its PCM.
        private func sine(_ capture: Capture, seconds: Int) throws -> (path: String, pcm: [Int16]) {
            let path = capture.dir.path("sine.wav")
            let made = try runTool(
                "/usr/bin/ffmpeg",
                [
                    "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i",
                    "sine=f=440:sample_rate=\(Self.rate)", "-t", "\(seconds)", "-ac", "2",
                    "-c:a", "pcm_s16le", path,
                ], timeout: 60)
            try #require(made.status == 0, "\(made.output)")
            let raw = try runTool(
                "/usr/bin/ffmpeg", ["-nostdin", "-v", "error", "-y", "-i", path, "-f", "s16le", path + ".raw"], timeout: 60)
            try #require(raw.status == 0, "\(raw.output)")
            return (path, Self.samples(try Data(contentsOf: URL(fileURLWithPath: path + ".raw"))))
        }

        static func samples(_ data: Data) -> [Int16] { data.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) } }

        /// Fades out linearly over `fade_s`, pauses once the silence is heard, and `play` goes on
        /// from the last sample heard: the pause's 5 ms fade-in, then full level.
        @Test func aSleepTimerFadesOutThenPausesAndPlayResumesAtFullLevel() throws {
            let capture = try Capture()
            defer { capture.dir.remove() }
            let source = try sine(capture, seconds: 30)
            let (daemon, client, watcher) = try start(capture, speed: 1)
            defer { withExtendedLifetime(daemon) {} }
            #expect(try client.call("add", ["urls": [source.path], "play": true]).stateName == "playing")
            let asked = Date()
            let set = try client.call("sleep", ["after_s": 1.5, "fade_s": 1.0])
            let plan = try #require(set.result?["sleep"] as? [String: Any], "\(set)")
            #expect(plan["fade_s"] as? Double == 1 && (plan["at"] as? String).flatMap(ISO8601DateFormatter().date(from:)) != nil, "\(plan)")
            #expect((try client.call("status").result?["sleep"] as? [String: Any])?["at"] as? String == plan["at"] as? String)
            _ = try readEvents(watcher, timeout: 10 * Sanitizer.timeScale) { $0.transitionTo == "paused" }
            let pausedAfter = Date().timeIntervalSince(asked)
            #expect(pausedAfter >= 1.5 && pausedAfter < 1.5 + 1.5 * Sanitizer.timeScale, "paused after \(pausedAfter) s")
            let status = try waitForHeldPosition(client)
            #expect(status["sleep"] is NSNull, "\(status)")
            let heard = Int(((status["position"] as? Double ?? 0) * Double(Self.rate)).rounded())

            // The capture: the sine as is, then a linear fade of 1 s, then silence.
            let before = Self.samples(capture.settled())
            // The first frame that differs is the fade's first, or up to a few dozen after it (a
            // fade that begins on the way down to a zero crossing rounds to the same samples
            // there): the best fit over a period of the sine before it is taken.
            // Best by the summed error: the worst error is a whole LSB at several starts a few
            // frames apart (the samples are integers), and the earliest of those would place the
            // fade's end early, where its last steps still round to ±1.
            let firstDiffering = try #require((0..<before.count).first { before[$0] != source.pcm[$0] }) / 2
            let fadeFrames = Self.rate
            try #require(before.count / 2 >= firstDiffering + fadeFrames, "the whole fade was written")
            func errors(_ start: Int) -> (worst: Double, total: Double) {
                var worst = 0.0
                var total = 0.0
                for frame in start..<start + fadeFrames {
                    let level = 1 - Double(frame - start + 1) / Double(fadeFrames)
                    let error = abs(Double(before[frame * 2]) - (Double(source.pcm[frame * 2]) * level).rounded())
                    worst = max(worst, error)
                    total += error
                }
                return (worst, total)
            }
            let fits = (max(0, firstDiffering - Self.rate / 440)...firstDiffering).map { (start: $0, error: errors($0)) }
            let best = try #require(fits.min { $0.error.total < $1.error.total })
            let (fadeStart, worst) = (best.start, best.error.worst)
            // Off by one frame, the summed error is about 1800 LSB; in place, it is a few rounding steps.
            #expect(
                worst <= 1 && best.error.total < Double(fadeFrames) / 100,
                "the fade is linear within 1 LSB (worst \(worst), summed \(best.error.total))")
            let tail = before.dropFirst((fadeStart + fadeFrames) * 2)
            #expect(
                tail.allSatisfy { $0 == 0 },
                "silent after the fade (ended at \(fadeStart + fadeFrames), first differing \(firstDiffering)): \(tail.filter { $0 != 0 }.count) samples are not, the first at \(tail.firstIndex { $0 != 0 }.map { $0 / 2 } ?? 0)"
            )
            #expect(
                heard >= fadeStart + fadeFrames && heard - (fadeStart + fadeFrames) < Self.rate,
                "paused once the silence was heard: at \(heard), the fade ended at \(fadeStart + fadeFrames)")

            // Play again: at full level, from the sample heard last.
            #expect(try client.call("play").stateName == "playing")
            usleep(700_000)
            _ = try client.call("pause")
            let after = Self.samples(capture.settled())
            let resumed = Array(after[before.count...])
            try #require(resumed.count > Self.rate, "\(resumed.count) samples after the play")
            // It fades in over 5 ms from there (the pause's fade the other way), then plays as it is.
            let ramp = Self.rate / 200
            var rampWorst = 0.0
            for frame in 0..<ramp {
                let level = Double(frame + 1) / Double(ramp)
                let expected = (Double(source.pcm[(heard + frame) * 2]) * level).rounded()
                rampWorst = max(rampWorst, abs(Double(resumed[frame * 2]) - expected))
            }
            #expect(
                rampWorst <= 1, "fades in from the sample heard last (worst \(rampWorst)); starts \(resumed.prefix(8)), heard at \(heard)")
            let fromHeard = Array(resumed[ramp * 2..<Self.rate]) == Array(source.pcm[(heard + ramp) * 2..<heard * 2 + Self.rate])
            #expect(fromHeard, "full level, from the sample heard last; starts \(resumed.prefix(8)), heard at \(heard)")
        }

        /// `at_end_of: item` stops where the item ends: the next item waits, ready (as after a
        /// load without play), at its first sample. `queue` with `repeat` on plays the queue
        /// through once, then waits at its first item instead of starting over.
        @Test(arguments: ["item", "queue"])
        func atTheEndOfTheItemOrQueuePlaybackWaitsAtWhatFollows(_ end: String) throws {
            let capture = try Capture()
            defer { capture.dir.remove() }
            let (daemon, client, watcher) = try start(capture, speed: 8)
            defer { withExtendedLifetime(daemon) {} }
            let added = try client.call("add", ["urls": [Fixtures.path("tone.wav"), Fixtures.path("tone.flac")]])
            let ids = (added.result?["items"] as? [[String: Any]])?.compactMap { $0["id"] as? Int } ?? []
            try #require(ids.count == 2)
            if end == "queue" { _ = try client.call("options", ["repeat": true]) }
            #expect((try client.call("sleep", ["at_end_of": end]).result?["sleep"] as? [String: Any])?["at_end_of"] as? String == end)
            #expect(try client.call("play", ["id": ids[0]]).stateName == "playing")
            _ = try readEvents(watcher, timeout: 20 * Sanitizer.timeScale) { $0.transitionTo == "ready" }
            let waitsAt = end == "item" ? ids[1] : ids[0]
            let status = try waitForStatus(client) { $0["current"] as? Int == waitsAt && $0.name == "ready" }
            #expect(status["position"] as? Double == 0 && status["sleep"] is NSNull, "\(status)")
            usleep(300_000)
            let tone = try Fixtures.wavPCM("tone.wav")
            #expect(capture.settled() == (end == "item" ? tone : tone + tone), "what was to play, whole, then nothing")
        }

        @Test func aCancelledTimerLeavesPlaybackAlone() throws {
            let capture = try Capture()
            defer { capture.dir.remove() }
            let source = try sine(capture, seconds: 5)
            let (daemon, client, _) = try start(capture, speed: 2)
            defer { withExtendedLifetime(daemon) {} }
            #expect(try client.call("add", ["urls": [source.path], "play": true]).stateName == "playing")
            _ = try client.call("sleep", ["after_s": 1.0, "fade_s": 0.5])
            usleep(200_000)
            let cancelled = try client.call("sleep", ["cancel": true])
            #expect(cancelled.result?["cancelled"] as? Bool == true, "\(cancelled)")
            _ = try waitForStatus(client, timeout: 20 * Sanitizer.timeScale) { $0.name == "ended" }
            let whole = Self.samples(capture.settled()) == source.pcm
            #expect(whole, "played whole at full level")
        }

        /// A timer due while an item loads to play (a radio filling its prebuffer, about a
        /// second at its bit rate): the item comes ready and stays paused.
        @Test func aTimerDueWhileLoadingLeavesTheItemPaused() throws {
            let server = try DaemonNetworkTests.radioServer()
            defer { server.stop() }
            let daemon = try DaemonProcess(arguments: ["--device", "null", "--pace"])
            defer { withExtendedLifetime(daemon) {} }
            let client = try daemon.connect()
            #expect(try client.call("sleep", ["after_s": 0.05, "fade_s": 0]).result != nil)
            let load = try client.call("load", ["url": server.url("/radio"), "play": true], timeout: 15)
            #expect(load.stateName == "ready", "\(load)")
            usleep(300_000)
            let status = try #require(client.call("status").result)
            #expect(status.name == "ready" && status["sleep"] is NSNull, "\(status)")
        }

        @Test func badRequestsGetAClearError() throws {
            let daemon = try DaemonProcess(arguments: ["--device", "null"])
            let client = try daemon.connect()
            let bad: [[String: Any]] = [
                [:], ["after_s": -1], ["after_s": 10, "at_end_of": "item"], ["at_end_of": "album"],
                ["at_end_of": "item", "fade_s": 3], ["after_s": 60, "fade_s": 601],
                ["cancel": true, "fade_s": 1], ["after_s": "soon"], ["until": 3], ["after_s": 700_000],
            ]
            for params in bad {
                let answer = try client.call("sleep", params)
                #expect(answer.errorCode == -32602 && answer.errorMessage?.isEmpty == false, "\(params): \(answer)")
            }
            #expect(try client.call("status").result?["sleep"] is NSNull)
        }
    }
}
