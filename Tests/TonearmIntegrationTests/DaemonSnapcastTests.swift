import Foundation
import Testing
import TonearmTestSupport

extension DaemonTests {
    /// Tonearm as the player of a Snapcast system: Debian's real snapserver with a TCP source in
    /// server mode, two real snapclients writing what their room hears to files, and tonearmd with
    /// `output.kind = "snapcast"` playing a queue into it.
    @Suite("Daemon plays into Snapcast", .serialized, .realDaemon(minutes: 3, alone: true))
    struct DaemonSnapcastTests {
        private func startDaemon(_ rig: SnapcastRig, extra: String = "") throws -> (DaemonProcess, LineClient) {
            let config = rig.directory.path("tonearmd.toml")
            try """
            [output]
            kind = "snapcast"
            reopen_interval_ms = 300
            [snapcast]
            source = "127.0.0.1:\(rig.sourcePort)"
            format = "\(SnapcastRig.format)"
            \(extra)
            """.write(toFile: config, atomically: true, encoding: .utf8)
            let daemon = try DaemonProcess(arguments: ["--config", config])
            return (daemon, try daemon.connect())
        }

        /// The three gapless fixtures as the engine converts them: each resampled to 48 kHz, joined.
        private func expectedQueueAudio(_ dir: TemporaryDirectory) throws -> [(Int16, Int16)] {
            var all: [(Int16, Int16)] = []
            for part in 1...3 {
                let out = dir.path("ref-\(part).raw")
                let made = try runTool(
                    "/usr/bin/ffmpeg",
                    [
                        "-nostdin", "-v", "error", "-y", "-i", Fixtures.path("gapless-\(part).flac"),
                        "-ar", "48000", "-ac", "2", "-f", "s16le", out,
                    ])
                #expect(made.status == 0, "\(made.output)")
                all += stereoFrames(readWholeFile(out))
            }
            return all
        }

        /// Where `expected` is heard in `captured`, block by block (50 ms), allowing the few single
        /// samples a Snapcast client adds or drops to stay in sync. Returns the worst block's
        /// correlation and how far the alignment drifted in all.
        private func match(_ captured: [(Int16, Int16)], _ expected: [(Int16, Int16)]) -> (start: Int, worst: Double, drift: Int)? {
            func level(_ frame: (Int16, Int16)) -> Int { max(abs(Int(frame.0)), abs(Int(frame.1))) }
            guard let firstHeard = captured.firstIndex(where: { level($0) > 200 }),
                let firstExpected = expected.firstIndex(where: { level($0) > 200 })
            else { return nil }
            func correlation(_ at: Int, _ from: Int, _ count: Int) -> Double {
                var dot = 0.0
                var a = 0.0
                var b = 0.0
                for index in 0..<count {
                    let x = Double(captured[at + index].0)
                    let y = Double(expected[from + index].0)
                    dot += x * y
                    a += x * x
                    b += y * y
                }
                return a > 0 && b > 0 ? dot / (a * b).squareRoot() : (a == b ? 1 : 0)
            }
            let block = 2400
            // Align the first block within ±100 frames of the first sound.
            let offset = firstHeard - firstExpected
            var start = offset
            var best = -2.0
            for lag in -100...100 where offset + lag >= 0 && offset + lag + block <= captured.count {
                let value = correlation(offset + lag, 0, block)
                if value > best {
                    best = value
                    start = offset + lag
                }
            }
            var worst = 1.0
            var shift = 0
            var from = 0
            while from + block <= expected.count {
                var blockBest = -2.0
                var blockShift = shift
                for lag in -3...3 where start + shift + lag + from >= 0 && start + shift + lag + from + block <= captured.count {
                    let value = correlation(start + shift + lag + from, from, block)
                    if value > blockBest {
                        blockBest = value
                        blockShift = shift + lag
                    }
                }
                shift = blockShift
                worst = min(worst, blockBest)
                from += block
            }
            return (start, worst, shift)
        }

        @Test func aQueueReachesEveryRoomInOrderWithoutAGapAndPauseIsSilence() throws {
            let rig = try SnapcastRig()
            defer {
                rig.stop()
                rig.directory.remove()
            }
            let rooms = [try rig.startClient("kitchen.raw"), try rig.startClient("hall.raw")]
            let (daemon, client) = try startDaemon(rig)
            defer { withExtendedLifetime(daemon) {} }
            let added = try client.call("add", ["urls": (1...3).map { Fixtures.path("gapless-\($0).flac") }, "play": true], timeout: 15)
            #expect(added.stateName == "playing", "\(added)")
            let media = try #require(try client.call("status").result?["media"] as? [String: Any])
            #expect(
                (media["output_format"] as? [String: Any])?["sample_rate"] as? Int == 48000, "converted to the source's format: \(media)")
            _ = try waitForStatus(client, timeout: 20) { $0.name == "ended" }
            sleep(2)  // snapserver's buffer (1 s) and the clients' latency play out
            let expected = try expectedQueueAudio(rig.directory)
            for room in rooms {
                let captured = stereoFrames(readWholeFile(room))
                let found = try #require(match(captured, expected), "\(room) heard nothing")
                // A sample a client adds or drops inside a block costs that block a few hundredths
                // of correlation on this signal; a gap of a few ms, or a missing end, costs far more.
                #expect(found.worst > 0.95, "\(room): every 50 ms of the queue is heard, in order, no gap: worst block \(found.worst)")
                #expect(abs(found.drift) <= 8, "\(room): no more than single samples added or dropped: \(found.drift)")
                let after = captured[(found.start + expected.count + found.drift + 480)...].prefix(48000)
                #expect(after.allSatisfy { abs(Int($0.0)) < 4 && abs(Int($0.1)) < 4 }, "\(room): silence after the end")
            }

            // Pause: the rooms go silent (nothing is sent; Snapcast marks the stream idle); play resumes.
            #expect(try client.call("play", ["id": 0], timeout: 15).stateName == "playing")
            usleep(500_000)
            #expect(try client.call("pause").stateName == "paused")
            sleep(2)
            let before = readWholeFile(rooms[0]).count
            usleep(500_000)
            let paused = stereoFrames(Array(readWholeFile(rooms[0])[before...]))
            #expect(paused.count > 10_000 && paused.allSatisfy { $0.0 == 0 && $0.1 == 0 }, "silence while paused")
            #expect(try client.call("play").stateName == "playing")
            sleep(2)
            let resumed = stereoFrames(Array(readWholeFile(rooms[0]).suffix(48000 * 4)))
            #expect(resumed.contains { abs(Int($0.0)) > 1000 }, "sound again after play")
        }

        /// What a room heard, as runs of 100 ms windows of one pitch (the left channel's zero
        /// crossings, to the nearest of the fixtures' 440, 500 and 1000 Hz; 0 for silence, -1 for
        /// a window that is none, such as one across a change) and one level (the peak; a run
        /// ends where it moves by more than a quarter).
        private struct Heard: CustomStringConvertible {
            var pitch: Int
            var seconds: Double
            /// Each window's peak.
            var peaks: [Int]
            /// The run's level: its windows' median peak (a gain's 5 ms ramp at its start, or the
            /// window across a change, does not make it).
            var peak: Int { peaks.sorted()[peaks.count / 2] }
            var description: String { "\(pitch) Hz ×\(String(format: "%.1f", seconds)) s @\(peak)" }
        }

        private func heard(_ frames: [(Int16, Int16)]) -> [Heard] {
            let window = 4800
            var runs: [Heard] = []
            var start = 0
            while start + window <= frames.count {
                let slice = frames[start..<(start + window)]
                let peak = slice.map { abs(Int($0.0)) }.max() ?? 0
                var pitch = 0
                if peak >= 8 {
                    var crossings = 0
                    var last = 0
                    for frame in slice where frame.0 != 0 {
                        let sign = frame.0 > 0 ? 1 : -1
                        if last != 0 && sign != last { crossings += 1 }
                        last = sign
                    }
                    let hertz = Double(crossings) / 2 / 0.1
                    pitch = [440, 500, 1000].first { abs(hertz - Double($0)) <= Double($0) * 0.04 } ?? -1
                }
                if var run = runs.last, run.pitch == pitch,
                    pitch <= 0 || Double(max(peak, run.peak)) <= 1.25 * Double(min(peak, run.peak))
                {
                    run.seconds += 0.1
                    run.peaks.append(peak)
                    runs[runs.count - 1] = run
                } else {
                    runs.append(Heard(pitch: pitch, seconds: 0.1, peaks: [peak]))
                }
                start += window
            }
            // Leading silence is the time before the first item; a lone window of its own is a
            // change from one sound to the next: the runs on either side are joined if alike.
            var joined: [Heard] = []
            for run in runs.drop(while: { $0.pitch == 0 }) where run.pitch == 0 || run.seconds > 0.15 {
                if var last = joined.last, last.pitch == run.pitch,
                    run.pitch == 0 || Double(max(run.peak, last.peak)) <= 1.25 * Double(min(run.peak, last.peak))
                {
                    last.seconds += run.seconds
                    last.peaks += run.peaks
                    joined[joined.count - 1] = last
                } else {
                    joined.append(run)
                }
            }
            return joined
        }

        /// Seek, next, stop, volume and ReplayGain asked of Tonearm are what the room hears next:
        /// the seek shortens the first item, next cuts the second, stop is silence, and the
        /// gains scale the samples as they do on ALSA.
        @Test func whatTonearmIsAskedIsWhatTheRoomHears() throws {
            let rig = try SnapcastRig()
            defer {
                rig.stop()
                rig.directory.remove()
            }
            let room = try rig.startClient("room.raw")
            let (daemon, client) = try startDaemon(rig)
            defer { withExtendedLifetime(daemon) {} }
            // 440 Hz, 1000 Hz, 440 Hz.
            let urls = ["tone.flac", "mono48k.wav", "tone.flac"].map { Fixtures.path($0) }
            #expect(try client.call("add", ["urls": urls, "play": true], timeout: 15).stateName == "playing")
            let beforeSeek = try waitForStatus(client) { $0["position"] as? Double ?? 0 >= 1.0 }
            #expect(try client.call("seek", ["position": 2.5]).stateName == "playing")
            let beforeNext = try waitForStatus(client) { $0["current"] as? Int == 1 && $0["position"] as? Double ?? 0 >= 0.7 }
            #expect(try client.call("next").stateName == "playing")
            let beforeStop = try waitForStatus(client) { $0["current"] as? Int == 2 && $0["position"] as? Double ?? 0 >= 1.0 }
            #expect(try client.call("stop").stateName == "idle")
            sleep(2)

            // The same 440 Hz at half the amplitude (ReplayGain), then at volume 50 (a factor of 0.125).
            #expect(try client.call("replay_gain", ["mode": "track"]).result != nil)
            #expect(try client.call("load", ["url": Fixtures.path("replaygain.flac"), "play": true], timeout: 15).stateName == "playing")
            _ = try waitForStatus(client) { $0["position"] as? Double ?? 0 >= 1.0 }
            #expect(try client.call("volume", ["level": 50]).result != nil)
            _ = try waitForStatus(client) { $0.name == "ended" }
            sleep(2)

            let runs = heard(stereoFrames(readWholeFile(room)))
            let sounds = runs.filter { $0.pitch != 0 || $0.seconds >= 0.5 }
            try #require(sounds.count >= 6, "440, 1000, 440, silence, 440 at two levels: \(runs)")
            // A cut item is heard a little longer than the position read before the command: by
            // the call's own time, and by what was already sent (snapserver's, not recallable:
            // Tonearm keeps one or two 200 ms pieces ahead of its clock).
            func near(_ run: Heard, _ pitch: Int, _ seconds: Double) -> Bool {
                run.pitch == pitch && (-0.2...(0.6 + (Sanitizer.timeScale - 1) * 0.1)).contains(run.seconds - seconds)
            }
            // The seek came at the position read just before it; the item's end follows 0.5 s after.
            let first = (beforeSeek["position"] as? Double ?? 1) + 0.5
            #expect(near(sounds[0], 440, first), "the seek shortened the first item to \(first) s: \(runs)")
            #expect(near(sounds[1], 1000, beforeNext["position"] as? Double ?? 0.7), "next cut the second: \(runs)")
            #expect(near(sounds[2], 440, beforeStop["position"] as? Double ?? 1), "stop cut the third: \(runs)")
            #expect(sounds[3].pitch == 0 && sounds[3].seconds >= 0.5, "silence after stop: \(runs)")
            let full = Double(sounds[0].peak)
            #expect(sounds[4].pitch == 440 && abs(Double(sounds[4].peak) / full - 0.5) < 0.05, "ReplayGain: half: \(runs)")
            #expect(sounds[5].pitch == 440 && abs(Double(sounds[5].peak) / full - 0.0625) < 0.01, "and volume 50: \(runs)")
        }

        /// A radio stream (the tone as a live MP3, sent at its bit rate) plays into Snapcast as a
        /// file does: the room hears it.
        @Test func aRadioStreamPlaysIntoTheRooms() throws {
            let rig = try SnapcastRig()
            defer {
                rig.stop()
                rig.directory.remove()
            }
            let room = try rig.startClient("room.raw")
            let server = try TestHTTPServer()
            defer { server.stop() }
            server.route("/radio", .live(path: Fixtures.path("tone.mp3"), contentType: "audio/mpeg", bytesPerSecond: 16_000))
            let (daemon, client) = try startDaemon(rig)
            defer { withExtendedLifetime(daemon) {} }
            let loaded = try client.call("load", ["url": "http://127.0.0.1:\(server.port)/radio", "play": true], timeout: 15)
            #expect(loaded.stateName == "playing", "\(loaded)")
            _ = try waitForStatus(client) { $0["position"] as? Double ?? 0 >= 2 }
            sleep(2)
            let runs = heard(stereoFrames(readWholeFile(room)))
            #expect(runs.contains { $0.pitch == 440 && $0.seconds >= 1.5 }, "the room hears the stream's 440 Hz: \(runs)")
        }

        /// snapserver's own MPD plug-in (meta_mpd.py, unchanged) pointed at Tonearm's MPD socket:
        /// Stream.Control through snapserver's JSON-RPC drives Tonearm, and what Tonearm plays is
        /// what snapserver shows.
        @Test func snapserversControlDrivesTonearmThroughItsMPDPlugin() throws {
            let rig = try SnapcastRig(sourceQuery: SnapcastRig.metaMPDQuery, start: false)
            defer {
                rig.stop()
                rig.directory.remove()
            }
            let (daemon, client) = try startDaemon(rig)
            let urls = ["tone.flac", "mono48k.wav", "tone.flac"].map { Fixtures.path($0) }
            #expect(try client.call("add", ["urls": urls]).result != nil)
            rig.serverEnvironment = ["MPD_HOST": daemon.directory.path("mpd.sock")]
            try rig.startServer()
            _ = try rig.startClient("room.raw")

            func stream() throws -> [String: Any] {
                let status = try rig.call("Server.GetStatus")
                let streams = (status["server"] as? [String: Any])?["streams"] as? [[String: Any]] ?? []
                return streams.first { $0["id"] as? String == "Tonearm" }?["properties"] as? [String: Any] ?? [:]
            }
            func waitForStream(_ what: String, _ predicate: ([String: Any]) -> Bool) throws -> [String: Any] {
                let deadline = Date().addingTimeInterval(10 * Sanitizer.timeScale)
                while true {
                    let properties = try stream()
                    if predicate(properties) { return properties }
                    if Date() > deadline {
                        throw LineClient.Failure(description: "snapserver never showed \(what): \(properties)\n\(rig.log)")
                    }
                    usleep(100_000)
                }
            }
            /// Sends `command` through snapserver and waits until Tonearm's status shows `done`.
            func control(_ command: String, _ params: [String: Any] = [:], until done: ([String: Any]) -> Bool) throws {
                var request: [String: Any] = ["id": "Tonearm", "command": command]
                if !params.isEmpty { request["params"] = params }
                _ = try rig.call("Stream.Control", request)
                do { _ = try waitForStatus(client, done) } catch {
                    throw LineClient.Failure(description: "\(command): \(error)\nsnapserver's log:\n\(rig.log.suffix(6000))")
                }
            }
            _ = try waitForStream("the plug-in connected") { $0["canControl"] as? Bool == true }

            try control("play") { $0.name == "playing" && $0["current"] as? Int == 0 }
            let shown = try waitForStream("the song") { ($0["metadata"] as? [String: Any])?["title"] as? String == "Test Tone" }
            let metadata = shown["metadata"] as? [String: Any] ?? [:]
            #expect(metadata["artist"] as? [String] == ["Tonearm"], "\(shown)")
            #expect(metadata["url"] as? String == urls[0], "\(shown)")
            #expect(shown["playbackStatus"] as? String == "playing", "\(shown)")

            try control("pause") { $0.name == "paused" }
            _ = try waitForStream("paused") { $0["playbackStatus"] as? String == "paused" }
            try control("play") { $0.name == "playing" }

            try control("setPosition", ["position": 2.0]) { $0["current"] as? Int == 0 && $0["position"] as? Double ?? 0 >= 2.0 }
            try control("next") { $0["current"] as? Int == 1 }
            _ = try waitForStream("the next song") { ($0["metadata"] as? [String: Any])?["url"] as? String == urls[1] }
            try control("seek", ["offset": 1.0]) { $0["current"] as? Int == 1 && $0["position"] as? Double ?? 0 >= 1.0 }
            try control("previous") { $0["current"] as? Int == 0 }
            try control("stop") { $0.name == "idle" }
            _ = try waitForStream("stopped") { $0["playbackStatus"] as? String == "stopped" }
        }

        @Test func aSnapserverThatGoesAwayIsALostDeviceAndPlaybackResumesIntoItsReturn() throws {
            let rig = try SnapcastRig()
            defer {
                rig.stop()
                rig.directory.remove()
            }
            let (daemon, client) = try startDaemon(rig)
            let watcher = try daemon.connect()
            #expect(try watcher.call("subscribe", ["events": ["transition", "performance"]]).result != nil)
            // A long queue: the tone over and over.
            let added = try client.call(
                "add", ["urls": Array(repeating: Fixtures.path("tone.flac"), count: 10), "play": true], timeout: 15)
            #expect(added.stateName == "playing", "\(added)")
            sleep(1)
            rig.killServer()
            let lost = try readEvents(
                watcher, timeout: 15,
                untilAll: [
                    { $0.performanceEvent == "device_lost" }, { $0.transitionTo == "paused" },
                ])
            #expect(lost.contains { $0.actionName == "deviceLost" }, "\(lost)")
            let status = try client.call("status").result ?? [:]
            #expect(status["interruption"] is String, "status says why it is paused: \(status)")
            try rig.startServer()
            let room = try rig.startClient("room.raw")
            let back = try readEvents(
                watcher, timeout: 15,
                untilAll: [
                    { $0.performanceEvent == "device_restored" }, { $0.transitionTo == "playing" },
                ])
            #expect(back.contains { $0.actionName == "deviceRestored" }, "\(back)")
            sleep(3)
            #expect(stereoFrames(readWholeFile(room)).contains { abs(Int($0.0)) > 1000 }, "the room hears it again")
        }
    }
}
