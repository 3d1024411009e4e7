import Foundation
import Testing
import TonearmTestSupport

extension DaemonTests {
    /// Untagged files leveled by the loudness the daemon measures itself (EBU R128), held to
    /// FFmpeg's ebur128 filter on what the `file:` device received.
    @Suite("Daemon levels untagged files by measured loudness", .serialized, .realDaemon(minutes: 3))
    struct DaemonLoudnessTests {
        typealias Capture = DaemonGaplessTests.Capture
        static let rate = 44100

        /// A stereo file made by FFmpeg from a lavfi source (16-bit where the codec has a choice).
        static func make(_ path: String, _ source: String, seconds: Int, metadata: [String] = []) throws {
            let samples = path.hasSuffix(".mp3") ? [] : ["-sample_fmt", "s16"]
            let made = try runTool(
                "/usr/bin/ffmpeg",
                [
                    "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", source, "-t", "\(seconds)",
                    "-ar", "\(rate)", "-ac", "2",
                ] + samples + metadata + [path], timeout: 60)
            try #require(made.status == 0, "\(made.output)")
        }

        /// Loud pink noise (about −12 LUFS) and a quiet sine (−32 LUFS): 20 LU apart.
        static func makeLoudAndQuiet(_ dir: TemporaryDirectory, loudTags: [String] = []) throws -> (loud: String, quiet: String) {
            let (loud, quiet) = (dir.path("loud.flac"), dir.path("quiet.flac"))
            try make(loud, "anoisesrc=color=pink:amplitude=0.8:seed=3", seconds: 6, metadata: loudTags)
            try make(quiet, "sine=f=1000:sample_rate=\(rate),volume=-32dB", seconds: 6)
            return (loud, quiet)
        }

        private func start(_ capture: Capture, _ extra: [String] = []) throws -> (DaemonProcess, LineClient, LineClient) {
            let daemon = try DaemonProcess(arguments: ["--device", capture.device, "--pace", "--speed", "8"] + extra)
            let client = try daemon.connect()
            let watcher = try daemon.connect()
            #expect(try watcher.call("subscribe", ["events": ["transition"]]).result != nil)
            return (daemon, client, watcher)
        }

        /// The queue's items' `{id, loudness}`, once every one of them is measured.
        private func waitUntilMeasured(_ client: LineClient, count: Int) throws -> [[String: Any]] {
            let deadline = Date().addingTimeInterval(30 * Sanitizer.timeScale)
            while true {
                let items = try client.call("loudness").result?["items"] as? [[String: Any]] ?? []
                if items.count == count, items.allSatisfy({ $0["loudness"] is [String: Any] }) { return items }
                guard Date() < deadline else { throw LineClient.Failure(description: "not measured in time: \(items)") }
                usleep(20_000)
            }
        }

        /// FFmpeg's integrated loudness of the capture's frames `range`.
        private func loudness(of pcm: Data, frames range: Range<Int>, _ dir: TemporaryDirectory) throws -> Double {
            let path = dir.path("part-\(range.lowerBound).raw")
            try pcm.subdata(in: range.lowerBound * 4..<min(range.upperBound * 4, pcm.count)).write(to: URL(fileURLWithPath: path))
            return try FFmpegLoudness(rawS16: path, sampleRate: Self.rate, channels: 2).integrated
        }

        /// Once the two 6 s files have played to the end: the loudness of each in the capture.
        private func halvesWhenEnded(_ capture: Capture, _ watcher: LineClient) throws -> (Double, Double) {
            _ = try readEvents(watcher, timeout: 30 * Sanitizer.timeScale) { $0.transitionTo == "ended" }
            let pcm = capture.settled()
            let frames = 6 * Self.rate
            try #require(pcm.count == 2 * frames * 4, "both files whole: \(pcm.count) bytes")
            return (try loudness(of: pcm, frames: 0..<frames, capture.dir), try loudness(of: pcm, frames: frames..<2 * frames, capture.dir))
        }

        private static func gain(_ status: [String: Any]?) -> (source: String?, decibels: Double?) {
            let loudness = status?["loudness"] as? [String: Any]
            return (loudness?["source"] as? String, loudness?["gain_db"] as? Double)
        }

        @Test func aLoudAndAQuietFileComeOutAtOneLevel() throws {
            let capture = try Capture()
            defer { capture.dir.remove() }
            let (loud, quiet) = try Self.makeLoudAndQuiet(capture.dir)
            let (daemon, client, watcher) = try start(capture)
            defer { withExtendedLifetime(daemon) {} }
            #expect(try client.call("replay_gain", ["mode": "loudness"]).result?["target_lufs"] as? Double == -18)
            _ = try client.call("add", ["urls": [loud, quiet]])
            let items = try waitUntilMeasured(client, count: 2)
            let measuredLoud = try #require((items[0]["loudness"] as? [String: Any])?["integrated_lufs"] as? Double)
            let reference = try FFmpegLoudness(file: loud).integrated
            #expect(abs(measuredLoud - reference) <= 0.1, "ours \(measuredLoud), FFmpeg's \(reference)")
            let played = try client.call("play", ["id": try #require(items[0]["id"] as? Int)])
            #expect(played.stateName == "playing", "\(played)")
            let shown = Self.gain(try client.call("status").result)
            #expect(shown.source == "measured" && abs((shown.decibels ?? 0) - (-18 - measuredLoud)) < 0.02, "\(shown)")
            let (first, second) = try halvesWhenEnded(capture, watcher)
            #expect(abs(first - second) <= 0.5, "leveled: \(first) and \(second) LUFS")
            #expect(abs(first + 18) <= 0.5 && abs(second + 18) <= 0.5, "at the target: \(first) and \(second) LUFS")
        }

        @Test func autoKeepsTheTagsGainAndLevelsTheUntagged() throws {
            let capture = try Capture()
            defer { capture.dir.remove() }
            let (loud, quiet) = try Self.makeLoudAndQuiet(capture.dir, loudTags: ["-metadata", "REPLAYGAIN_TRACK_GAIN=-3.00 dB"])
            let (daemon, client, watcher) = try start(capture)
            defer { withExtendedLifetime(daemon) {} }
            _ = try client.call("replay_gain", ["mode": "auto"])
            _ = try client.call("add", ["urls": [loud, quiet]])
            let items = try waitUntilMeasured(client, count: 2)
            _ = try client.call("play", ["id": try #require(items[0]["id"] as? Int)])
            let shown = Self.gain(try client.call("status").result)
            #expect(shown.source == "tags" && shown.decibels == -3, "\(shown)")
            _ = try readEvents(watcher, timeout: 30 * Sanitizer.timeScale) { $0.transitionTo == "ended" }
            let pcm = capture.settled()
            let frames = 6 * Self.rate
            try #require(pcm.count == 2 * frames * 4, "both files whole: \(pcm.count) bytes")
            let original = try FFmpegLoudness(file: loud).integrated
            let first = try loudness(of: pcm, frames: 0..<frames, capture.dir)
            let second = try loudness(of: pcm, frames: frames..<2 * frames, capture.dir)
            #expect(abs(first - (original - 3)) <= 0.1, "the tag's −3 dB: \(original) → \(first) LUFS")
            #expect(abs(second + 18) <= 0.5, "the untagged file at the target: \(second) LUFS")
        }

        /// An item started before it was measured is leveled by its opening's loudness to its
        /// end, at one gain; the decoder measures it on the way from the frames it decodes anyway
        /// (no second decode of the whole: the measuring thread leaves it alone), and it is
        /// leveled by that when it starts again.
        @Test func anItemStartedUnmeasuredKeepsItsOpeningsLevelAndIsMeasuredOnTheWay() throws {
            let capture = try Capture()
            defer { capture.dir.remove() }
            let long = capture.dir.path("long.wav")
            try Self.make(long, "anoisesrc=color=pink:amplitude=0.5:seed=5", seconds: 40)
            let (daemon, client, watcher) = try start(capture, ["--log-level", "debug"])
            defer { withExtendedLifetime(daemon) {} }
            _ = try client.call("replay_gain", ["mode": "loudness"])
            let added = try client.call("add", ["urls": [long], "play": true])
            #expect(added.stateName == "playing", "\(added)")
            let reference = try FFmpegLoudness(file: long).integrated
            let status = try client.call("status").result
            let early = Self.gain(status)
            let opening = try #require((status?["loudness"] as? [String: Any])?["integrated_lufs"] as? Double)
            #expect(abs(opening - reference) <= 0.5, "steady noise: its opening is as loud as the whole (\(opening), \(reference))")
            #expect(early.source == "provisional" && abs((early.decibels ?? 0) - min(0, -18 - opening)) < 0.02, "\(early)")
            let measured = try waitUntilMeasured(client, count: 1)
            let integrated = try #require((measured[0]["loudness"] as? [String: Any])?["integrated_lufs"] as? Double)
            #expect(abs(integrated - reference) <= 0.1)
            // Heard on after the measurement landed: still the opening's level.
            let late = Self.gain(try client.call("status").result)
            #expect(late.source == "provisional" && late.decibels == early.decibels, "\(late)")
            _ = try readEvents(watcher, timeout: 30 * Sanitizer.timeScale) { $0.transitionTo == "ended" }
            let pcm = capture.settled()
            let frames = 40 * Self.rate
            try #require(pcm.count == frames * 4, "the whole file: \(pcm.count) bytes")
            let first = try loudness(of: pcm, frames: 0..<frames / 2, capture.dir)
            let second = try loudness(of: pcm, frames: frames / 2..<frames, capture.dir)
            let wanted = reference + (early.decibels ?? 0)
            #expect(abs(first - wanted) <= 0.3 && abs(second - wanted) <= 0.3, "one gain to the end: \(first), \(second), \(wanted) LUFS")
            #expect(!daemon.log.contains("measured loudness"), "measured on the way only: \(daemon.log)")
            // Played again (opened anew: playing on after the end is the same item going on),
            // the item starts with what was measured.
            let id = try #require(measured[0]["id"] as? Int)
            #expect(try client.call("play", ["id": id]).stateName == "playing")
            let again = Self.gain(try client.call("status").result)
            #expect(again.source == "measured" && abs((again.decibels ?? 0) - (-18 - integrated)) < 0.02, "\(again)")
        }

        /// `auto`, an untagged queue added and played at once: its first item, started before it
        /// was measured, is leveled by its opening, as the next one is by its measurement.
        @Test func theFirstItemOfAnUntaggedQueueIsLeveledLikeTheNext() throws {
            let capture = try Capture()
            defer { capture.dir.remove() }
            let (loud, quiet) = try Self.makeLoudAndQuiet(capture.dir)
            let (daemon, client, watcher) = try start(capture)
            defer { withExtendedLifetime(daemon) {} }
            _ = try client.call("replay_gain", ["mode": "auto"])
            #expect(try client.call("add", ["urls": [loud, quiet], "play": true]).stateName == "playing")
            let shown = Self.gain(try client.call("status").result)
            #expect(shown.source == "provisional" && (shown.decibels ?? 0) < -0.5, "lowered from its opening: \(shown)")
            // The next item is measured ahead at idle priority: on a busy machine that can take
            // longer than the first item's 0.75 s at 8×. Paused (two 5 ms fades, nothing to the
            // loudness of 6 s) until it is, the next one is sure to start measured.
            #expect(try client.call("pause").stateName == "paused")
            let deadline = Date().addingTimeInterval(30 * Sanitizer.timeScale)
            while (try client.call("loudness").result?["items"] as? [[String: Any]])?.last?["loudness"] as? [String: Any] == nil {
                try #require(Date() < deadline, "the next item was not measured in time")
                usleep(20_000)
            }
            #expect(try client.call("play").stateName == "playing")
            let (first, second) = try halvesWhenEnded(capture, watcher)
            #expect(abs(first - second) <= 0.5, "leveled alike: \(first) and \(second) LUFS")
        }

        /// A seek gives the measurement on the way up: the measuring thread measures the file.
        @Test func aSeekLeavesTheMeasurementToTheMeasuringThread() throws {
            let capture = try Capture()
            defer { capture.dir.remove() }
            let long = capture.dir.path("long.wav")
            try Self.make(long, "anoisesrc=color=pink:amplitude=0.5:seed=6", seconds: 240)
            let (daemon, client, _) = try start(capture, ["--log-level", "debug"])
            defer { withExtendedLifetime(daemon) {} }
            _ = try client.call("replay_gain", ["mode": "loudness"])
            #expect(try client.call("add", ["urls": [long], "play": true]).stateName == "playing")
            #expect(try client.call("seek", ["position": 120]).result != nil)
            let measured = try waitUntilMeasured(client, count: 1)
            let integrated = try #require((measured[0]["loudness"] as? [String: Any])?["integrated_lufs"] as? Double)
            #expect(abs(integrated - (try FFmpegLoudness(file: long).integrated)) <= 0.1)
            let position = try #require(try client.call("status").result?["position"] as? Double)
            #expect(position < 200, "measured ahead, long before the end: at \(position) s")
            #expect(daemon.log.contains("measured loudness"), "\(daemon.log)")
        }

        /// The library's songs are measured in the background after the scan, shown by
        /// `library.search`, and kept: a restart measures none of them again.
        @Test func theLibrarysSongsAreMeasuredOnce() throws {
            let directory = try TemporaryDirectory()
            defer { directory.remove() }
            let tree = try MusicTree(
                at: directory.path("music"),
                [
                    .init("A/one.flac", ["title": "One"]), .init("A/two.wav", from: "tone.wav"), .init("B/three.ogg", from: "tone.ogg"),
                ])
            let config = directory.path("tonearmd.toml")
            try "[library]\nmusic_directory = \"\(tree.root)\"\n".write(toFile: config, atomically: true, encoding: .utf8)
            let arguments = ["--device", "null", "--config", config, "--state-directory", directory.path("state"), "--log-level", "debug"]
            func searched(_ client: LineClient) throws -> [[String: Any]] {
                try client.call("library.search", ["query": ""]).result?["songs"] as? [[String: Any]] ?? []
            }
            do {
                let daemon = try DaemonProcess(arguments: arguments)
                let client = try daemon.connect()
                let deadline = Date().addingTimeInterval(30 * Sanitizer.timeScale)
                var songs = try searched(client)
                while songs.count < 3 || songs.contains(where: { $0["loudness"] == nil }) {
                    try #require(Date() < deadline, "not measured in time: \(songs)")
                    usleep(50_000)
                    songs = try searched(client)
                }
                let reference = try FFmpegLoudness(file: tree.root + "/A/one.flac").integrated
                let one = try #require(songs.first { $0["uri"] as? String == "A/one.flac" })
                let measured = try #require((one["loudness"] as? [String: Any])?["integrated_lufs"] as? Double)
                #expect(abs(measured - reference) <= 0.1, "ours \(measured), FFmpeg's \(reference)")
                #expect(daemon.log.components(separatedBy: "measured loudness").count - 1 == 3, "\(daemon.log)")
                #expect(daemon.terminate() == 0)
            }
            let daemon = try DaemonProcess(arguments: arguments)
            let client = try daemon.connect()
            // Queue items are looked up (and measured) ahead only under a mode that levels by loudness.
            _ = try client.call("replay_gain", ["mode": "auto"])
            _ = try client.call("add", ["urls": ["A/one.flac"]])
            let items = try waitUntilMeasured(client, count: 1)
            #expect((items[0]["loudness"] as? [String: Any])?["integrated_lufs"] != nil)
            #expect(try searched(client).allSatisfy { $0["loudness"] != nil })
            usleep(500_000)
            #expect(!daemon.log.contains("measured loudness"), "nothing measured twice: \(daemon.log)")
        }

        /// A quiet live stream (a −30 dBFS sine, as MP3 over HTTP without a length) under
        /// `replay_gain.live = "agc"`: its level rises by 1 dB every 5 s of audio, up to +6 dB.
        @Test func aQuietLiveStreamIsRaisedSlowlyAndNoFurtherThanSixDecibels() throws {
            let capture = try Capture()
            defer { capture.dir.remove() }
            let stream = capture.dir.path("radio.mp3")
            // lavfi's sine is at 1/8 of full scale (−18 dBFS): −12 dB more makes −30.
            try Self.make(stream, "sine=f=1000:sample_rate=\(Self.rate),volume=-12dB", seconds: 90, metadata: ["-b:a", "192k"])
            let server = try TestHTTPServer()
            defer { server.stop() }
            server.route("/radio", .live(path: stream, contentType: "audio/mpeg", bytesPerSecond: 1 << 20))
            let config = capture.dir.path("tonearmd.toml")
            // Released at the stop: the device's close hands the capture its last frames.
            try "[replay_gain]\nlive = \"agc\"\n[output]\nrelease_after_s = 0\n".write(toFile: config, atomically: true, encoding: .utf8)
            let (daemon, client, _) = try start(capture, ["--config", config])
            defer { withExtendedLifetime(daemon) {} }
            #expect(try client.call("load", ["url": server.url("/radio"), "play": true]).stateName == "playing")
            _ = try waitForStatus(client, timeout: 30 * Sanitizer.timeScale) { ($0["position"] as? Double ?? 0) >= 40 }
            let shown = Self.gain(try client.call("status").result)
            #expect(shown.source == "live" && abs((shown.decibels ?? 0) - 6) < 0.01, "\(shown)")
            _ = try client.call("stop")
            let pcm = capture.settled()
            // MP3 decodes to float: the device was opened for 32-bit float.
            try #require(pcm.count >= 40 * Self.rate * 8, "\(pcm.count) bytes captured")
            // Each second's level, in dB against the stream's own (FFmpeg's decode of it).
            let made = try runTool(
                "/usr/bin/ffmpeg", ["-nostdin", "-v", "error", "-y", "-i", stream, "-f", "f32le", stream + ".raw"], timeout: 60)
            try #require(made.status == 0, "\(made.output)")
            let source = try Data(contentsOf: URL(fileURLWithPath: stream + ".raw"))
            let reference = Self.decibels(source, seconds: 10..<20)
            let gains = (0..<40).map { Self.decibels(pcm, seconds: $0..<$0 + 1) - reference }
            for (second, gain) in gains.enumerated() {
                // In second n the gain goes from 0.2·n to 0.2·(n + 1) dB (the decoder runs ahead
                // of the capture by at most a chunk), and stops at 6.
                let expected = min(6, 0.2 * (Double(second) + 0.5))
                #expect(abs(gain - expected) <= 0.2, "second \(second): \(gain) dB, expected about \(expected)")
            }
            #expect(zip(gains, gains.dropFirst()).allSatisfy { $1 - $0 <= 0.3 }, "never faster than 1 dB per 5 s: \(gains)")
        }

        /// The power of float stereo PCM over `seconds`, dB.
        static func decibels(_ pcm: Data, seconds: Range<Int>) -> Double {
            pcm.withUnsafeBytes { raw in
                let window = raw.bindMemory(to: Float.self)[seconds.lowerBound * rate * 2..<seconds.upperBound * rate * 2]
                return 10 * log10(window.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(window.count))
            }
        }

        /// The PCM of a 16-bit WAV file, as FFmpeg decodes it.
        static func pcm(ofWAV path: String) throws -> Data {
            let raw = path + ".raw"
            let made = try runTool("/usr/bin/ffmpeg", ["-nostdin", "-v", "error", "-y", "-i", path, "-f", "s16le", raw], timeout: 60)
            try #require(made.status == 0, "\(made.output)")
            return try Data(contentsOf: URL(fileURLWithPath: raw))
        }
    }
}
