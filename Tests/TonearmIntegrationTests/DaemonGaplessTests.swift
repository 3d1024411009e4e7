import Foundation
import Testing
import TonearmTestSupport

extension DaemonTests {
    /// Queues played through the real daemon and captured through ALSA's `file` device, piped
    /// into a script that appends what it receives and counts how often the device was opened.
    @Suite("Daemon plays a queue gaplessly", .serialized, .realDaemon(minutes: 2))
    struct DaemonGaplessTests {
        /// A capture device that keeps everything across reopens and counts the opens.
        struct Capture {
            let dir: TemporaryDirectory
            var device: String { "file:'|sh \(dir.path("capture.sh"))',raw" }

            init() throws {
                dir = try TemporaryDirectory()
                let script = "#!/bin/sh\necho open >> '\(dir.path("opens"))'\nexec cat >> '\(dir.path("out.raw"))'\n"
                try script.write(toFile: dir.path("capture.sh"), atomically: true, encoding: .utf8)
            }

            var pcm: Data { (try? Data(contentsOf: URL(fileURLWithPath: dir.path("out.raw")))) ?? Data() }
            var opens: Int {
                ((try? String(contentsOfFile: dir.path("opens"), encoding: .utf8)) ?? "").split(separator: "\n").count
            }

            /// Waits until the capture stops growing (the piped `cat` wrote everything).
            func settled() -> Data {
                var last = -1
                for _ in 0..<100 {
                    let count = pcm.count
                    if count == last { break }
                    last = count
                    usleep(50_000)
                }
                return pcm
            }
        }

        private func start(_ capture: Capture) throws -> (DaemonProcess, LineClient, LineClient) {
            let daemon = try DaemonProcess(arguments: ["--device", capture.device, "--pace", "--speed", "8"])
            let client = try daemon.connect()
            let watcher = try daemon.connect()
            #expect(try watcher.call("subscribe", ["events": ["transition", "item", "queue"]]).result != nil)
            return (daemon, client, watcher)
        }

        /// Plays `files` as a queue to its end; returns the item events seen.
        private func playQueue(_ files: [String], _ client: LineClient, _ watcher: LineClient) throws -> [[String: Any]] {
            let added = try client.call("add", ["urls": files.map(Fixtures.path), "play": true])
            #expect(added.stateName == "playing", "\(added)")
            let events = try readEvents(watcher, timeout: 30) { $0.transitionTo == "ended" }
            return events.filter { $0["type"] as? String == "item" }
        }

        /// tone.wav cut in three at sample counts that are not round.
        static let cuts = [0, 37817, 91009, 132300]

        private func cutWAVs(in dir: TemporaryDirectory) throws -> [String] {
            let pcm = try Fixtures.wavPCM("tone.wav")
            return try (1...3).map { part in
                let path = dir.path("part\(part).wav")
                let slice = pcm.subdata(in: Self.cuts[part - 1] * 4..<Self.cuts[part] * 4)
                try wavFile(pcm: slice).write(to: URL(fileURLWithPath: path))
                return path
            }
        }

        @Test func cutWAVsJoinIntoTheUncutSignalWithTheDeviceOpenedOnce() throws {
            let capture = try Capture()
            defer { capture.dir.remove() }
            let (daemon, client, watcher) = try start(capture)
            defer { withExtendedLifetime(daemon) {} }
            let parts = try cutWAVs(in: capture.dir)
            let added = try client.call("add", ["urls": parts, "play": true])
            #expect(added.stateName == "playing", "\(added)")
            let ids = (added.result?["items"] as? [[String: Any]])?.compactMap { $0["id"] as? Int } ?? []
            #expect(ids.count == 3)
            let events = try readEvents(watcher, timeout: 30) { $0.transitionTo == "ended" }
            let items = events.filter { $0["type"] as? String == "item" }
            #expect(items.compactMap { $0["id"] as? Int } == ids, "an item event for each, in order: \(items)")
            #expect(items.compactMap { $0["reason"] as? String } == ["user", "advance", "advance"])
            #expect(capture.settled() == (try Fixtures.wavPCM("tone.wav")), "the parts join sample for sample")
            #expect(capture.opens == 1, "the device stayed open across the joins")
            let status = try #require(client.call("status").result)
            #expect(
                status["current"] as? Int == ids.last && abs((status["position"] as? Double ?? 0) - 41291.0 / 44100) < 0.001,
                "\(status)")
        }

        @Test func cutFLACsJoinIntoTheUncutSignal() throws {
            let capture = try Capture()
            defer { capture.dir.remove() }
            let (daemon, client, watcher) = try start(capture)
            defer { withExtendedLifetime(daemon) {} }
            _ = try playQueue(["gapless-1.flac", "gapless-2.flac", "gapless-3.flac"], client, watcher)
            #expect(capture.settled() == (try Fixtures.wavPCM("tone.wav")))
            #expect(capture.opens == 1)
        }

        @Test func aPlaylistFileQueuesItsEntries() throws {
            let capture = try Capture()
            defer { capture.dir.remove() }
            let (daemon, client, watcher) = try start(capture)
            defer { withExtendedLifetime(daemon) {} }
            let added = try client.call("add", ["urls": [Fixtures.path("gapless.m3u")]])
            let items = try #require(added.result?["items"] as? [[String: Any]])
            #expect(items.compactMap { $0["url"] as? String } == (1...3).map { Fixtures.path("gapless-\($0).flac") })
            let queue = try #require(client.call("queue").result?["items"] as? [[String: Any]])
            #expect(queue.first?["title"] as? String == "Part one", "#EXTINF titles are kept: \(queue)")
            #expect(try client.call("play", ["id": items[0]["id"] as? Int ?? -1]).stateName == "playing")
            _ = try readEvents(watcher, timeout: 30) { $0.transitionTo == "ended" }
            #expect(capture.settled() == (try Fixtures.wavPCM("tone.wav")))
        }

        /// Lossy parts: the queue gives exactly what each part gives played alone, one after another.
        @Test(arguments: ["mp3", "m4a", "opus"])
        func lossyPartsJoinAsEachDecodesAlone(_ ext: String) throws {
            let files = (1...3).map { "gapless-\($0).\(ext)" }
            let joined = try Capture()
            defer { joined.dir.remove() }
            let (daemon, client, watcher) = try start(joined)
            defer { withExtendedLifetime(daemon) {} }
            _ = try playQueue(files, client, watcher)
            let queued = joined.settled()
            #expect(joined.opens == 1, "one open for the whole queue")

            var alone = Data()
            for file in files {
                let capture = try Capture()
                defer { capture.dir.remove() }
                let (single, singleClient, singleWatcher) = try start(capture)
                _ = single
                _ = try playQueue([file], singleClient, singleWatcher)
                alone += capture.settled()
            }
            #expect(queued.count == alone.count, "\(ext): \(queued.count) bytes queued, \(alone.count) alone")
            #expect(queued == alone, "\(ext): the queue is the concatenation of each file's own decode")
        }

        /// 44.1 kHz → 48 kHz mono → 44.1 kHz: each item is heard to its last sample, the device
        /// reopens at each change of format, and every sample of each arrives.
        @Test func formatChangesPlayEverySampleOfEach() throws {
            let capture = try Capture()
            defer { capture.dir.remove() }
            let (daemon, client, watcher) = try start(capture)
            defer { withExtendedLifetime(daemon) {} }
            let items = try playQueue(["tone.wav", "mono48k.wav", "tone.wav"], client, watcher)
            #expect(items.compactMap { $0["reason"] as? String } == ["user", "advance", "advance"], "\(items)")
            let tone = try Fixtures.wavPCM("tone.wav")
            let expected = tone + (try Fixtures.wavPCM("mono48k.wav")) + tone
            #expect(capture.settled() == expected)
            #expect(capture.opens == 3, "reopened at each change of format")
        }
    }
}
