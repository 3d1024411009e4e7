import Foundation
import Testing
import TonearmTestSupport

#if canImport(Glibc)
    import Glibc
#endif

extension DaemonTests {
    /// Resume after a restart, a crash or a power loss (the unattended-running issue, §1): the
    /// real daemon, restarted on the same state directory.
    @Suite("Daemon comes back where it was", .serialized, .realDaemon(minutes: 10))
    struct DaemonStateTests {
        private func start(_ stateDirectory: String, _ extra: [String] = []) throws -> (DaemonProcess, LineClient) {
            let daemon = try DaemonProcess(
                arguments: ["--device", "null", "--pace"] + extra,
                environment: ["STATE_DIRECTORY": stateDirectory])
            return (daemon, try daemon.connect())
        }

        private func ids(_ client: LineClient) throws -> [Int] {
            let items = try #require(client.call("queue").result?["items"] as? [[String: Any]])
            return items.compactMap { $0["id"] as? Int }
        }

        private func config(_ dir: TemporaryDirectory, _ text: String) throws -> String {
            let path = dir.path("tonearmd.toml")
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }

        /// SIGTERM keeps the exact position, the queue with its ids and current item, the
        /// options, volume and ReplayGain; the restart comes up paused there.
        @Test func aCleanStopKeepsTheExactPlace() throws {
            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            let state = dir.path("state")
            var (daemon, client) = try start(state)
            let added = try client.call("add", ["urls": ["tone.wav", "tone.flac", "tone.mp3"].map(Fixtures.path)])
            #expect(added.result?["items"] != nil, "\(added)")
            #expect(try client.call("play", ["id": 1]).stateName == "playing")
            _ = try client.call("seek", ["position": 1.25])
            _ = try client.call("pause")
            _ = try client.call("volume", ["level": 40])
            _ = try client.call("replay_gain", ["mode": "track", "preamp_db": -3])
            _ = try client.call("options", ["repeat": true])
            let before = try #require(client.call("status").result)
            let position = try #require(before["position"] as? Double)
            let version = try #require(client.call("queue").result?["version"] as? Int)
            #expect(daemon.terminate() == 0)

            (daemon, client) = try start(state)
            // The item is resumed while the daemon already serves.
            // Once the resume settled: it loads the item at the saved place (ready there), then
            // seeks it there, which makes it paused as it was.
            let after = try waitForStatus(client) { !["idle", "loading", "ready", "seeking"].contains($0.name ?? "") }
            #expect(after.name == "paused", "\(after)")
            #expect(after["position"] as? Double == position, "saved \(position), restored \(after)")
            #expect(after["current"] as? Int == 1)
            #expect(after["volume"] as? Int == 40)
            #expect((after["replay_gain"] as? [String: Any])?["mode"] as? String == "track")
            #expect((after["replay_gain"] as? [String: Any])?["preamp_db"] as? Double == -3)
            let queue = try #require(client.call("queue").result)
            #expect(queue["repeat"] as? Bool == true)
            #expect(try ids(client) == [0, 1, 2])
            #expect((queue["version"] as? Int ?? 0) >= version, "the queue version never goes back")
            // New items go on from the saved ids: an old id never names a new item.
            let more = try client.call("add", ["urls": [Fixtures.path("tone.ogg")]])
            #expect(((more.result?["items"] as? [[String: Any]])?.first?["id"] as? Int) == 3)
            #expect(try client.call("play").stateName == "playing")
            #expect(daemon.terminate() == 0)
        }

        /// `state.resume = "playing"` plays on what was playing; `"off"` brings back the queue only.
        @Test func resumeModes() throws {
            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            let state = dir.path("state")
            var (daemon, client) = try start(state)
            _ = try client.call("add", ["urls": [Fixtures.path("gapless-1.flac"), Fixtures.path("tone.flac")]])
            #expect(try client.call("play", ["id": 1]).stateName == "playing")
            #expect(daemon.terminate() == 0)

            let playing = try config(dir, "[state]\nresume = \"playing\"\n")
            (daemon, client) = try start(state, ["--config", playing])
            let resumed = try waitForStatus(client) { $0.name == "playing" }
            #expect(resumed["current"] as? Int == 1)
            #expect(daemon.terminate() == 0)

            let off = try config(dir, "[state]\nresume = \"off\"\n")
            (daemon, client) = try start(state, ["--config", off])
            let status = try #require(client.call("status").result)
            #expect(status.name == "idle" && status["current"] as? Int == 1, "\(status)")
            #expect(try ids(client) == [0, 1])
            #expect(try client.call("play").stateName == "playing", "play starts the current item")
        }

        /// A file that is gone since stays queued and fails when reached, like any bad item.
        @Test func aFileGoneSinceFailsWhenReached() throws {
            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            let state = dir.path("state")
            let copy = dir.path("copy.wav")
            try FileManager.default.copyItem(atPath: Fixtures.path("tone.wav"), toPath: copy)
            var (daemon, client) = try start(state)
            _ = try client.call("add", ["urls": [copy, Fixtures.path("tone.flac")]])
            #expect(try client.call("play", ["id": 0]).stateName == "playing")
            _ = try client.call("pause")
            #expect(daemon.terminate() == 0)
            try FileManager.default.removeItem(atPath: copy)

            (daemon, client) = try start(state)
            #expect(try ids(client) == [0, 1], "the missing file is still queued")
            // Loading item 1 is a passing state; wait for where it settles.
            let status = try waitForStatus(client) {
                $0["current"] as? Int == 1 && !["idle", "loading", "seeking"].contains($0.name ?? "")
            }
            #expect(["ready", "paused"].contains(status.name ?? ""), "\(status)")
        }

        /// A torn, empty, truncated or garbage state file is set aside and the daemon starts
        /// empty, and saves a good state again.
        @Test(arguments: [
            "", "garbage", "{\"format\":1,\"queue\":{\"items\":[", String(repeating: "\0", count: 64),
            "{\"format\":1,\"playback\":\"paused\",\"position\":-1,\"volume\":50,\"replayGainMode\":\"off\",\"replayGainPreampDB\":0,\"queue\":{\"items\":[],\"nextID\":0,\"version\":0,\"options\":{\"repeat\":false,\"single\":false,\"consume\":false,\"random\":false},\"shuffleOrder\":[],\"rng\":{\"state\":0}}}",
            "{\"format\":1,\"playback\":\"paused\",\"position\":0,\"volume\":50,\"replayGainMode\":\"off\",\"replayGainPreampDB\":0,\"queue\":{\"items\":[],\"currentID\":7,\"nextID\":0,\"version\":0,\"options\":{\"repeat\":false,\"single\":false,\"consume\":false,\"random\":false},\"shuffleOrder\":[],\"rng\":{\"state\":0}}}",
        ])
        func aBadStateFileIsSetAside(content: String) throws {
            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            let state = dir.path("state")
            try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
            try content.write(toFile: state + "/state.json", atomically: false, encoding: .utf8)
            let (daemon, client) = try start(state)
            #expect(try client.call("ping")["result"] as? String == "pong")
            #expect(try ids(client).isEmpty)
            // Compared by size first: FoundationEssentials leaks its read buffer on an empty file.
            let kept = (try FileManager.default.contentsOfDirectory(atPath: state)).filter { $0.hasPrefix("state.json.bad-") }
            #expect(kept.count == 1, "\(kept)")
            let corrupt = state + "/" + (kept.first ?? "state.json.bad-")
            let size = try FileManager.default.attributesOfItem(atPath: corrupt)[.size] as? Int
            #expect(size == content.utf8.count)
            if size ?? 0 > 0 { #expect(try String(contentsOfFile: corrupt, encoding: .utf8) == content) }
            #expect(daemon.log.contains("unusable"), "\(daemon.log)")
            _ = try client.call("add", ["urls": [Fixtures.path("tone.wav")]])
            _ = try client.call("volume", ["level": 7])
            #expect(daemon.terminate() == 0)
            let (restarted, again) = try start(state)
            #expect(try ids(again) == [0], "a good state was saved over it")
            #expect(restarted.terminate() == 0)
        }

        /// A state directory that cannot be written is a warning; playback goes on.
        @Test func anUnwritableStateDirectoryIsOnlyAWarning() throws {
            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            let blocker = dir.path("a-file")
            try "not a directory".write(toFile: blocker, atomically: true, encoding: .utf8)
            let (daemon, client) = try start(blocker + "/state")
            _ = try client.call("add", ["urls": [Fixtures.path("tone.wav")]])
            #expect(try client.call("play").stateName == "playing")
            usleep(200_000)
            #expect(daemon.log.contains("cannot save the state"), "\(daemon.log)")
            #expect(daemon.log.components(separatedBy: "cannot save the state").count == 2, "said once")
            #expect(try client.call("status").stateName == "playing")
        }

        /// `kill -9` just after a gapless join: the new item resumes near where it was heard,
        /// never at the old item's position (it came back 8.5 s into a 10 s song), and the
        /// queue's durations are known at once.
        @Test func aKillNineJustAfterAJoinResumesTheNewItemWhereItWas() throws {
            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            var files: [String] = []
            for n in 0..<3 {
                let file = dir.path("tone\(n).wav")
                let made = try runTool(
                    "/usr/bin/ffmpeg",
                    [
                        "-v", "error", "-y", "-f", "lavfi", "-i", "sine=f=\(440 + 110 * n):d=4:sample_rate=48000",
                        "-ac", "2", file,
                    ], timeout: 60)
                try #require(made.status == 0, "ffmpeg: \(made.output)")
                files.append(file)
            }
            let state = dir.path("state")
            let configPath = try config(dir, "[state]\nresume = \"playing\"\nsave_interval_s = 1\n")
            for round in 0..<3 {
                var (daemon, client) = try start(state, ["--config", configPath])
                _ = try client.call("clear")
                _ = try client.call("add", ["urls": files])
                let first = try ids(client)[0]
                #expect(try client.call("play", ["id": first]).stateName == "playing")
                _ = try client.call("seek", ["position": 3.3])
                let joined = try waitForStatus(client, timeout: 10) {
                    ($0["current"] as? Int) == first + 1 && ($0["position"] as? Double ?? 0) >= 0.5
                }
                let heard = try #require(joined["position"] as? Double)
                kill(daemon.process.processIdentifier, SIGKILL)
                daemon.process.waitUntilExit()

                (daemon, client) = try start(state, ["--config", configPath])
                let queue = try #require(client.call("queue").result?["items"] as? [[String: Any]])
                #expect(
                    queue.allSatisfy { ($0["duration"] as? Double).map { abs($0 - 4) < 0.01 } == true },
                    "round \(round): durations kept: \(queue)")
                let after = try waitForStatus(client) { !["idle", "loading", "seeking"].contains($0.name ?? "") }
                #expect(after["current"] as? Int == first + 1, "round \(round): \(after)")
                let restored = after["position"] as? Double ?? -1
                #expect(restored <= heard + 0.5, "round \(round): heard at \(heard), restored at \(restored) (the old item's place?)")
                #expect(daemon.terminate() == 0)
            }
        }

        /// `kill -9` at random moments, during playback and during heavy queue changes: every
        /// restart comes up with a valid state, and, where the last change had time to be saved,
        /// on the same item within `save_interval_s` of where playback was.
        @Test func killNineAtRandomMomentsAlwaysRestartsValid() throws {
            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            let state = dir.path("state")
            let interval = 0.3
            let configPath = try config(dir, "[state]\nresume = \"playing\"\nsave_interval_s = \(interval)\n")
            let files = ["tone.wav", "tone.flac", "tone.mp3", "tone.ogg", "gapless-1.flac", "gapless-2.flac"].map(Fixtures.path)
            var random = SeededRandom(seed: 0x5EED_0010)
            let rounds = Sanitizer.active == nil ? 200 : 40
            var expected: (current: Int, position: Double, playing: Bool)?
            var everAdded = Set<Int>()
            var positionsChecked = 0
            for round in 0..<rounds {
                let (daemon, client) = try start(state, ["--config", configPath])
                // A request left unanswered names its round, its call and what the daemon logged.
                do {
                    // What was saved playing or paused is resumed while the daemon already serves.
                    let status =
                        expected == nil
                        ? try #require(client.call("status").result, "round \(round): \(daemon.log)")
                        : try waitForStatus(client) { !["idle", "loading", "seeking"].contains($0.name ?? "") }
                    let queueIDs = try ids(client)
                    #expect(Set(queueIDs).count == queueIDs.count, "round \(round): ids repeat")
                    #expect(Set(queueIDs).isSubset(of: everAdded), "round \(round): \(queueIDs) not all added")
                    if let expected, status["current"] as? Int == expected.current, let restored = status["position"] as? Double {
                        positionsChecked += 1
                        #expect(restored >= expected.position - interval - 0.25, "round \(round): \(restored) < \(expected.position)")
                        #expect(
                            restored <= expected.position + 0.25 || expected.playing, "round \(round): \(restored) > \(expected.position)")
                    }
                    expected = nil

                    // Some changes, then maybe a quiet moment, then kill -9.
                    for _ in 0..<Int.random(in: 1...6, using: &random) {
                        switch Int.random(in: 0..<7, using: &random) {
                        case 0, 1:
                            let urls = (0..<Int.random(in: 1...3, using: &random)).map { _ in files.randomElement(using: &random)! }
                            let added = try client.call("add", ["urls": urls])
                            for item in added.result?["items"] as? [[String: Any]] ?? [] { everAdded.insert(item["id"] as? Int ?? -1) }
                        case 2:
                            if let id = try ids(client).randomElement(using: &random) { _ = try client.call("play", ["id": id]) }
                        case 3:
                            _ = try client.call("seek", ["position": Double.random(in: 0...2.5, using: &random)])
                        case 4:
                            _ = try client.call(Bool.random(using: &random) ? "pause" : "play")
                        case 5:
                            let queue = try ids(client)
                            if queue.count > 4, let id = queue.randomElement(using: &random) {
                                _ = try client.call("remove", ["ids": [id]])
                            }
                        default:
                            let queue = try ids(client)
                            if let id = queue.randomElement(using: &random) {
                                _ = try client.call("move", ["id": id, "position": Int.random(in: 0..<queue.count, using: &random)])
                            }
                        }
                    }
                    if Bool.random(using: &random) {
                        // Quiet: the last change is saved; the position is known.
                        usleep(UInt32.random(in: 50_000...400_000, using: &random))
                        let now = try #require(client.call("status").result)
                        if let current = now["current"] as? Int, let position = now["position"] as? Double,
                            ["playing", "paused", "ready"].contains(now.name ?? "")
                        {
                            expected = (current, position, now.name == "playing")
                        }
                        usleep(UInt32.random(in: 0...300_000, using: &random))
                    } else {
                        // Mid-change: kill while adds are still arriving.
                        let urls = Array(files.prefix(3))
                        let added = try client.call("add", ["urls": urls])
                        for item in added.result?["items"] as? [[String: Any]] ?? [] { everAdded.insert(item["id"] as? Int ?? -1) }
                        let request = try JSONSerialization.data(withJSONObject: [
                            "jsonrpc": "2.0", "id": 99, "method": "add", "params": ["urls": urls],
                        ])
                        try client.send(raw: request + Data("\n".utf8))
                        // Those three may be saved or not; their ids are the next three.
                        let next = (everAdded.max() ?? -1) + 1
                        for id in next..<(next + 3) { everAdded.insert(id) }
                        usleep(UInt32.random(in: 0...3_000, using: &random))
                    }
                    kill(daemon.process.processIdentifier, SIGKILL)
                } catch {
                    let stacks = daemon.threadStacks
                    kill(daemon.process.processIdentifier, SIGKILL)
                    daemon.process.waitUntilExit()
                    Issue.record("round \(round): \(error)\n\(daemon.log)\n\(stacks)")
                    return
                }
                kill(daemon.process.processIdentifier, SIGKILL)
                daemon.process.waitUntilExit()
            }
            #expect(positionsChecked >= rounds / 5, "only \(positionsChecked) of \(rounds) restarts checked a position")
        }
    }
}
