import Foundation
import Testing
import TonearmTestSupport

extension DaemonTests {
    /// Tonearm as the player of a Snapcast system: Debian's real snapserver with a TCP source in
    /// server mode, two real snapclients writing what their room hears to files, and tonearmd with
    /// `output.kind = "snapcast"` playing a queue into it.
    @Suite("Daemon plays into Snapcast", .serialized, .timeLimit(.minutes(3)))
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
                let made = try runTool("/usr/bin/ffmpeg", ["-nostdin", "-v", "error", "-y", "-i", Fixtures.path("gapless-\(part).flac"),
                                                           "-ar", "48000", "-ac", "2", "-f", "s16le", out])
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
                  let firstExpected = expected.firstIndex(where: { level($0) > 200 }) else { return nil }
            func correlation(_ at: Int, _ from: Int, _ count: Int) -> Double {
                var dot = 0.0, a = 0.0, b = 0.0
                for index in 0..<count {
                    let x = Double(captured[at + index].0), y = Double(expected[from + index].0)
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
                if value > best { best = value; start = offset + lag }
            }
            var worst = 1.0
            var shift = 0
            var from = 0
            while from + block <= expected.count {
                var blockBest = -2.0, blockShift = shift
                for lag in -3...3 where start + shift + lag + from >= 0 && start + shift + lag + from + block <= captured.count {
                    let value = correlation(start + shift + lag + from, from, block)
                    if value > blockBest { blockBest = value; blockShift = shift + lag }
                }
                shift = blockShift
                worst = min(worst, blockBest)
                from += block
            }
            return (start, worst, shift)
        }

        @Test func aQueueReachesEveryRoomInOrderWithoutAGapAndPauseIsSilence() throws {
            let rig = try SnapcastRig()
            defer { rig.stop(); rig.directory.remove() }
            let rooms = [try rig.startClient("kitchen.raw"), try rig.startClient("hall.raw")]
            let (daemon, client) = try startDaemon(rig)
            _ = daemon
            let added = try client.call("add", ["urls": (1...3).map { Fixtures.path("gapless-\($0).flac") }, "play": true], timeout: 15)
            #expect(added.stateName == "playing", "\(added)")
            let media = try #require(try client.call("status").result?["media"] as? [String: Any])
            #expect((media["output_format"] as? [String: Any])?["sample_rate"] as? Int == 48000, "converted to the source's format: \(media)")
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

        @Test func aSnapserverThatGoesAwayIsALostDeviceAndPlaybackResumesIntoItsReturn() throws {
            let rig = try SnapcastRig()
            defer { rig.stop(); rig.directory.remove() }
            let (daemon, client) = try startDaemon(rig)
            let watcher = try daemon.connect()
            #expect(try watcher.call("subscribe", ["events": ["transition", "performance"]]).result != nil)
            // A long queue: the tone over and over.
            let added = try client.call("add", ["urls": Array(repeating: Fixtures.path("tone.flac"), count: 10), "play": true], timeout: 15)
            #expect(added.stateName == "playing", "\(added)")
            sleep(1)
            rig.killServer()
            let lost = try readEvents(watcher, timeout: 15, untilAll: [
                { $0.performanceEvent == "device_lost" }, { $0.transitionTo == "paused" },
            ])
            #expect(lost.contains { $0.actionName == "audioSessionInterrupted" }, "\(lost)")
            let status = try client.call("status").result ?? [:]
            #expect(status["interruption"] is String, "status says why it is paused: \(status)")
            try rig.startServer()
            let room = try rig.startClient("room.raw")
            let back = try readEvents(watcher, timeout: 15, untilAll: [
                { $0.performanceEvent == "device_restored" }, { $0.transitionTo == "playing" },
            ])
            #expect(back.contains { $0.actionName == "audioSessionResumed" }, "\(back)")
            sleep(3)
            #expect(stereoFrames(readWholeFile(room)).contains { abs(Int($0.0)) > 1000 }, "the room hears it again")
        }
    }
}
