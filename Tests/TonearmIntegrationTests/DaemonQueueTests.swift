import Foundation
import Testing
import TonearmTestSupport

extension DaemonTests {
    /// The queue methods and events through the real daemon's socket.
    @Suite("Daemon queue", .serialized, .realDaemon(minutes: 1))
    struct DaemonQueueTests {
        private func start(_ extra: [String] = []) throws -> (DaemonProcess, LineClient, LineClient) {
            let daemon = try DaemonProcess(arguments: ["--device", "null", "--pace", "--speed", "8"] + extra)
            let client = try daemon.connect()
            let watcher = try daemon.connect()
            #expect(try watcher.call("subscribe", ["events": ["transition", "item", "queue"]]).result != nil)
            return (daemon, client, watcher)
        }

        private func ids(_ response: [String: Any]) -> [Int] {
            (response.result?["items"] as? [[String: Any]])?.compactMap { $0["id"] as? Int } ?? []
        }

        private func queue(_ client: LineClient) throws -> (ids: [Int], result: [String: Any]) {
            let result = try #require(client.call("queue").result)
            return ((result["items"] as? [[String: Any]])?.compactMap { $0["id"] as? Int } ?? [], result)
        }

        @Test func editingKeepsIdsAndCountsVersions() throws {
            let (daemon, client, _) = try start()
            defer { withExtendedLifetime(daemon) {} }
            let first = try client.call("add", ["urls": [Fixtures.path("tone.wav"), Fixtures.path("tone.flac")]])
            let a = ids(first)
            #expect(a.count == 2 && first.result?["version"] as? Int == 1, "\(first)")
            let second = try client.call("add", ["urls": [Fixtures.path("tone.mp3")], "position": 0])
            let b = ids(second)
            #expect(second.result?["version"] as? Int == 2)
            #expect(try queue(client).ids == b + a)
            #expect(try client.call("move", ["id": b[0], "position": 2]).result?["version"] as? Int == 3)
            #expect(try queue(client).ids == a + b, "moves keep ids")
            #expect(try client.call("remove", ["ids": [a[0]]]).result?["version"] as? Int == 4)
            #expect(try queue(client).ids == [a[1], b[0]])
            // Bad requests change nothing and say why.
            #expect(try client.call("remove", ["ids": [999]]).errorCode == -32602)
            #expect(try client.call("move", ["id": a[1], "position": 7]).errorCode == -32602)
            #expect(try client.call("add", ["urls": []]).errorCode == -32602)
            #expect(try client.call("add", ["urls": ["relative.wav"]]).errorCode == -32602)
            #expect(try client.call("add", ["urls": [Fixtures.path("tone.wav")], "position": 9]).errorCode == -32602)
            #expect(try queue(client).result["version"] as? Int == 4, "refused edits leave the version")
            let cleared = try client.call("clear")
            #expect(cleared.result?["version"] as? Int == 5)
            #expect(try queue(client).ids.isEmpty)
            let again = ids(try client.call("add", ["urls": [Fixtures.path("tone.wav")]]))
            #expect(again.count == 1 && again[0] > b[0], "ids are never reused")
        }

        @Test func nextPreviousAndPlayById() throws {
            let (daemon, client, watcher) = try start()
            defer { withExtendedLifetime(daemon) {} }
            let items = ids(try client.call("add", ["urls": ["tone.wav", "tone.flac", "tone.mp3"].map(Fixtures.path)]))
            let played = try client.call("play", ["id": items[1]])
            #expect(played.stateName == "playing" && played.result?["current"] as? Int == items[1], "\(played)")
            let status = try #require(client.call("status").result)
            #expect(status["current"] as? Int == items[1] && status["next"] as? Int == items[2], "\(status)")
            #expect(try client.call("next").result?["current"] as? Int == items[2])
            #expect(try client.call("previous").result?["current"] as? Int == items[1])
            #expect(try client.call("pause").stateName == "paused")
            let moved = try client.call("next")
            #expect(moved.result?["current"] as? Int == items[2] && moved.stateName == "ready", "next keeps a pause: \(moved)")
            #expect(try client.call("play", ["id": 12345]).errorCode == -32602)
            let events = try readEvents(watcher) { $0["type"] as? String == "item" && $0["id"] as? Int == items[2] }
            #expect(events.contains { $0["type"] as? String == "item" && $0["reason"] as? String == "user" })
        }

        @Test func loadReplacesTheQueue() throws {
            let (daemon, client, _) = try start()
            defer { withExtendedLifetime(daemon) {} }
            _ = try client.call("add", ["urls": ["tone.wav", "tone.flac"].map(Fixtures.path)])
            #expect(try client.call("load", ["url": Fixtures.path("tone.mp3")]).stateName == "ready")
            let listed = try queue(client).result["items"] as? [[String: Any]]
            #expect(listed?.count == 1 && listed?.first?["url"] as? String == Fixtures.path("tone.mp3"))
        }

        @Test func badItemsAreSkippedAndTheQueueGoesOn() throws {
            let (daemon, client, watcher) = try start()
            defer { withExtendedLifetime(daemon) {} }
            let files = [Fixtures.path("tone.wav"), Fixtures.path("notmedia.mp3"), "/nonexistent/x.flac", Fixtures.path("tone.flac")]
            let items = ids(try client.call("add", ["urls": files, "play": true]))
            let events = try readEvents(watcher, timeout: 20) { $0.transitionTo == "ended" }
            let failed = events.filter { $0["type"] as? String == "item_failed" }
            #expect(failed.compactMap { $0["id"] as? Int } == [items[1], items[2]], "\(failed)")
            #expect(failed.compactMap { $0["kind"] as? String } == ["unsupported_format", "file_not_found"])
            let heard = events.filter { $0["type"] as? String == "item" }.compactMap { $0["id"] as? Int }
            #expect(heard == [items[0], items[3]], "\(events)")
        }

        @Test func aQueueOfOnlyBadItemsEndsCleanly() throws {
            let (daemon, client, watcher) = try start()
            defer { withExtendedLifetime(daemon) {} }
            let added = try client.call("add", ["urls": [Fixtures.path("notmedia.mp3"), "/nonexistent/y.wav"], "play": true])
            #expect(ids(added).count == 2 && added.stateName == "idle", "\(added)")
            let failed = try readEvents(watcher) { $0["type"] as? String == "item_failed" && ($0["kind"] as? String) == "file_not_found" }
            #expect(failed.filter { $0["type"] as? String == "item_failed" }.count == 2)
            #expect(try client.call("ping")["result"] as? String == "pong")
            #expect(try client.call("status").result?.name == "idle")
        }

        @Test func repeatLoopsTheQueueAndConsumeRemovesWhatWasPlayed() throws {
            let (daemon, client, watcher) = try start()
            defer { withExtendedLifetime(daemon) {} }
            let items = ids(try client.call("add", ["urls": [Fixtures.path("gapless-1.flac"), Fixtures.path("gapless-2.flac")]]))
            let options = try client.call("options", ["repeat": true, "consume": false])
            #expect(options.result?["repeat"] as? Bool == true)
            #expect(try client.call("play", ["id": items[0]]).stateName == "playing")
            // Around the loop: item 2, then item 1 again.
            let looped = try readEvents(watcher, timeout: 20) {
                $0["type"] as? String == "item" && $0["reason"] as? String == "advance" && $0["id"] as? Int == items[0]
            }
            #expect(!looped.contains { $0.transitionTo == "ended" })
            _ = try client.call("options", ["repeat": false, "consume": true])
            let ended = try readEvents(watcher, timeout: 20) { $0.transitionTo == "ended" }
            _ = ended
            #expect(try queue(client).ids.count < 2, "consume removed what was played")
        }

        @Test func volumeAndReplayGainSettingsAnswerAndShowInStatus() throws {
            let (daemon, client, _) = try start()
            defer { withExtendedLifetime(daemon) {} }
            #expect(try client.call("status").result?["volume"] as? Int == 100)
            #expect(try client.call("volume", ["level": 40]).result?["volume"] as? Int == 40)
            #expect(try client.call("volume", ["delta": -50]).result?["volume"] as? Int == 0)
            #expect(try client.call("volume", ["delta": 15]).result?["volume"] as? Int == 15)
            #expect(try client.call("volume", ["level": 101]).errorCode == -32602)
            #expect(try client.call("volume", ["level": 50.5]).errorCode == -32602)
            let gain = try client.call("replay_gain", ["mode": "album", "preamp_db": 3])
            #expect(gain.result?["mode"] as? String == "album" && gain.result?["preamp_db"] as? Double == 3)
            #expect(try client.call("replay_gain", ["mode": "loud"]).errorCode == -32602)
            _ = try client.call("load", ["url": Fixtures.path("tone.wav")])
            _ = try client.call("stop")
            let status = try #require(client.call("status").result)
            #expect(status["volume"] as? Int == 15, "the level survives load and stop")
            #expect((status["replay_gain"] as? [String: Any])?["mode"] as? String == "album")
        }
    }
}
