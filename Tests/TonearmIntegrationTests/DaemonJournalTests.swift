import Foundation
import Testing
import TonearmTestSupport

#if canImport(Glibc)
    import Glibc
#endif

extension DaemonTests {
    /// An acknowledged change is durable before its reply (the defects issue's §4): the real
    /// daemon, killed with SIGKILL right after a reply, restarted on the same state directory.
    @Suite("Daemon keeps every acknowledged change", .serialized, .realDaemon(minutes: 5))
    struct DaemonJournalTests {
        private func start(_ stateDirectory: String) throws -> (DaemonProcess, LineClient) {
            let daemon = try DaemonProcess(arguments: ["--device", "null"], environment: ["STATE_DIRECTORY": stateDirectory])
            return (daemon, try daemon.connect())
        }

        private func ids(_ client: LineClient) throws -> [Int] {
            let items = try #require(client.call("queue").result?["items"] as? [[String: Any]])
            return items.compactMap { $0["id"] as? Int }
        }

        /// What the replies said the daemon keeps.
        private struct Kept: Equatable {
            var ids: [Int] = []
            var volume = 100
            var repeatOn = false
        }

        private func crash(_ daemon: DaemonProcess) {
            kill(daemon.process.processIdentifier, SIGKILL)
            daemon.process.waitUntilExit()
        }

        /// JSON-RPC: each round makes one change, reads its reply, and kills the daemon at once;
        /// the restart has every change a reply announced.
        @Test func everyAcknowledgedChangeSurvivesAKillNine() throws {
            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            let state = dir.path("state")
            var kept = Kept()
            var random = SeededRandom(seed: 0x0004_D0AB)
            for round in 0..<24 {
                let (daemon, client) = try start(state)
                #expect(try ids(client) == kept.ids, "round \(round): the queue lost an acknowledged change")
                let status = try #require(client.call("status").result)
                #expect(status["volume"] as? Int == kept.volume, "round \(round): \(status)")
                #expect(try client.call("queue").result?["repeat"] as? Bool == kept.repeatOn, "round \(round)")
                switch round % 6 {
                case 0, 1:
                    let added = try client.call("add", ["urls": [Fixtures.path("tone.wav"), Fixtures.path("tone.flac")]])
                    kept.ids += try #require(added.result?["items"] as? [[String: Any]]).compactMap { $0["id"] as? Int }
                case 2:
                    let id = try #require(kept.ids.randomElement(using: &random))
                    let position = Int.random(in: 0..<kept.ids.count, using: &random)
                    #expect(try client.call("move", ["id": id, "position": position]).result != nil)
                    kept.ids.removeAll { $0 == id }
                    kept.ids.insert(id, at: position)
                case 3:
                    let id = try #require(kept.ids.randomElement(using: &random))
                    #expect(try client.call("remove", ["ids": [id]]).result != nil)
                    kept.ids.removeAll { $0 == id }
                case 4:
                    kept.volume = Int.random(in: 0...99, using: &random)
                    #expect(try client.call("volume", ["level": kept.volume]).result?["volume"] as? Int == kept.volume)
                default:
                    kept.repeatOn.toggle()
                    #expect(try client.call("options", ["repeat": kept.repeatOn]).result?["repeat"] as? Bool == kept.repeatOn)
                }
                crash(daemon)
            }
        }

        /// MPD: the same with MPD's commands, and a command list that makes many changes at once.
        @Test func everyAcknowledgedMPDChangeSurvivesAKillNine() throws {
            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            let state = dir.path("state")
            var kept = Kept()
            for round in 0..<12 {
                let (daemon, client) = try start(state)
                #expect(try ids(client) == kept.ids, "round \(round): the queue lost an acknowledged change")
                #expect(try client.call("status").result?["volume"] as? Int == kept.volume, "round \(round)")
                let mpd = try MPDTestClient(path: daemon.mpdSocketPath)
                switch round % 4 {
                case 0:
                    let reply = try mpd.command("addid \"\(Fixtures.path("tone.wav"))\"")
                    kept.ids.append(try #require(reply.values("Id").first.flatMap { Int($0) }, "\(reply)"))
                case 1:
                    let list =
                        ["command_list_begin"] + Array(repeating: "add \"\(Fixtures.path("tone.flac"))\"", count: 5)
                        + ["command_list_end"]
                    for line in list.dropLast() { try mpd.connection.send(line: line) }
                    #expect(try mpd.command(list.last!).ok)
                    let next = (kept.ids.max() ?? -1) + 1
                    kept.ids += Array(next..<(next + 5))
                case 2:
                    let id = kept.ids[kept.ids.count / 2]
                    #expect(try mpd.command("moveid \(id) 0").ok)
                    kept.ids.removeAll { $0 == id }
                    kept.ids.insert(id, at: 0)
                default:
                    kept.volume = 10 + round
                    #expect(try mpd.command("setvol \(kept.volume)").ok)
                    let id = kept.ids.last!
                    #expect(try mpd.command("deleteid \(id)").ok)
                    kept.ids.removeLast()
                }
                crash(daemon)
            }
        }

        /// An edit of a long queue appends to the journal and leaves the snapshot alone; a
        /// clean stop folds the journal into the snapshot, and the restart has every edit.
        @Test func anEditAppendsToTheJournalNotTheSnapshot() throws {
            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            let state = dir.path("state")
            var (daemon, client) = try start(state)
            for _ in 0..<2 {
                #expect(
                    try client.call("add", ["urls": Array(repeating: Fixtures.path("tone.wav"), count: 1_000)], timeout: 60).result != nil)
            }
            // The snapshot at start; the adds are in the journal.
            let snapshot = state + "/state.json"
            let journal = state + "/state.journal"
            var before = stat()
            #expect(stat(snapshot, &before) == 0)
            var order = try ids(client)
            for step in 0..<20 {
                let id = order[step + 1 + (step * 97) % (order.count - step - 1)]
                #expect(try client.call("move", ["id": id, "position": step]).result != nil)
                order.removeAll { $0 == id }
                order.insert(id, at: step)
            }
            var after = stat()
            #expect(stat(snapshot, &after) == 0)
            #expect(after.st_ino == before.st_ino && after.st_size == before.st_size, "the snapshot was rewritten")
            let lines = try String(contentsOfFile: journal, encoding: .utf8).split(separator: "\n")
            #expect(lines.filter { $0.contains(#""move""#) }.count == 20, "\(lines.count) journal lines")
            #expect(daemon.terminate() == 0)
            #expect((try? FileManager.default.attributesOfItem(atPath: journal)[.size] as? Int) == 0, "folded at the stop")

            (daemon, client) = try start(state)
            #expect(try ids(client) == order)
            #expect(daemon.terminate() == 0)
        }

        /// A journal whose last line a crash cut short loses that line only; one damaged in
        /// the middle keeps the changes before the damage and is set aside, not written over.
        @Test func aDamagedJournalKeepsWhatCameBeforeTheDamage() throws {
            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            let state = dir.path("state")
            var (daemon, client) = try start(state)
            #expect(try client.call("add", ["urls": [Fixtures.path("tone.wav"), Fixtures.path("tone.flac")]]).result != nil)
            #expect(try client.call("move", ["id": 1, "position": 0]).result != nil)
            crash(daemon)
            let journal = state + "/state.journal"
            let good = try String(contentsOfFile: journal, encoding: .utf8)
            #expect(good.split(separator: "\n").count == 2, "\(good)")

            // Cut short: a third change begun and never finished.
            try (good + #"{"change":{"volume":{"lev"#).write(toFile: journal, atomically: false, encoding: .utf8)
            (daemon, client) = try start(state)
            #expect(try ids(client) == [1, 0])
            #expect(daemon.log.contains("cut short by a crash"), "\(daemon.log)")
            crash(daemon)

            // Damaged, with no snapshot to start from (as after a crash before the first one):
            // a garbage line before the move; the add before it is kept.
            try FileManager.default.removeItem(atPath: state + "/state.json")
            let lines = good.split(separator: "\n")
            try ("\(lines[0])\nnot a change\n\(lines[1])\n").write(toFile: journal, atomically: false, encoding: .utf8)
            (daemon, client) = try start(state)
            #expect(try ids(client) == [0, 1], "the add before the damage is kept")
            #expect(daemon.log.contains("the state journal is damaged"), "\(daemon.log)")
            let aside = try FileManager.default.contentsOfDirectory(atPath: state).filter { $0.hasPrefix("state.journal.bad-") }
            #expect(aside.count == 1, "\(aside)")
            #expect(daemon.terminate() == 0)
        }
    }
}
