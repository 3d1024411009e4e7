import Foundation
import Testing
import TonearmProtocol
import TonearmTestSupport

extension DaemonTests {
    /// Seeks and loads at an item's edges (its end, past it, overlapped by a pause, replaced by a
    /// stop or a load), with real clients, many trials, bounded in time.
    @Suite("Daemon seeks and loads at the edges of an item", .serialized, .realDaemon(minutes: 2))
    struct DaemonSeekEdgeTests {
        /// A FLAC seek after the decoder reached the end of the file lands like any other.
        @Test func flacSeekNearTheEndAfterEOF() throws {
            let daemon = try DaemonProcess(arguments: ["--device", "null", "--pace", "--speed", "8"])
            let client = try daemon.connect()
            for file in ["tone.flac", "hires.flac"] {
                #expect(try client.call("load", ["url": Fixtures.path(file)]).stateName == "ready")
                let duration = try #require(client.call("status").result?["duration"] as? Double)
                _ = try client.call("seek", ["position": duration])
                let near = try client.call("seek", ["position": duration - 0.1])
                #expect(near.stateName == "paused", "\(file): \(near)")
                #expect(abs((near.result?["position"] as? Double ?? 0) - (duration - 0.1)) < 0.0001)
                // After playing to the end, too.
                #expect(try client.call("play").stateName == "playing")
                _ = try waitForStatus(client) { $0.name == "ended" }
                let again = try client.call("seek", ["position": duration - 0.1])
                #expect(again.stateName == "paused", "\(file) after the end: \(again)")
                #expect(try client.call("play").stateName == "playing")
                _ = try waitForStatus(client) { $0.name == "ended" }
            }
        }

        /// A seek overlapped by another client's pause is answered, and the state leaves `seeking`.
        @Test func seekOverlappedByAPauseIsAnswered() throws {
            let daemon = try DaemonProcess(arguments: ["--device", "null", "--pace"])
            let seeker = try daemon.connect()
            let pauser = try daemon.connect()
            #expect(try seeker.call("load", ["url": Fixtures.path("tone.wav"), "play": true]).stateName == "playing")
            for trial in 0..<40 {
                _ = try seeker.call("play")
                let request = try JSONSerialization.data(withJSONObject: [
                    "jsonrpc": "2.0", "id": 1, "method": "seek", "params": ["position": Double(trial % 20) / 10],
                ])
                try seeker.send(raw: request + Data("\n".utf8))
                usleep(UInt32(trial % 3) * 1000)
                _ = try pauser.call("pause")
                let answer = try seeker.readJSON(timeout: 2)
                #expect(answer["result"] != nil, "trial \(trial): \(answer)")
                let state = try waitForStatus(seeker, timeout: 2) { $0.name != "seeking" }
                #expect(state.name == "paused", "trial \(trial): \(state)")
            }
        }

        /// A seek at the moment a short file ends never leaves `playing` with a frozen position.
        @Test func seekAtTheEndNeverFreezesPlaying() throws {
            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            let short = dir.path("short.wav")
            try wavFile(pcm: try Fixtures.wavPCM("tone.wav").prefix(13230 * 4)).write(to: URL(fileURLWithPath: short))
            let daemon = try DaemonProcess(arguments: ["--device", "null", "--pace"])
            let client = try daemon.connect()
            for trial in 0..<30 {
                #expect(try client.call("load", ["url": short, "play": true]).stateName == "playing")
                usleep(UInt32(292_000 + (trial % 9) * 2_000))
                let seek = try client.call("seek", ["position": 0.2])
                #expect(seek.result != nil || seek.errorCode == -32002, "trial \(trial): \(seek)")
                let settled = try waitForStatus(client, timeout: 2) { $0.name == "ended" || $0.name == "paused" }
                #expect(["ended", "paused"].contains(settled.name ?? ""), "trial \(trial): the seek landed and played on: \(settled)")
            }
        }

        /// A seek replaced by `stop` or `load` is answered as superseded, not as a success.
        @Test func seekReplacedByStopOrLoadIsSuperseded() throws {
            let daemon = try DaemonProcess(arguments: ["--device", "null", "--pace"])
            let seeker = try daemon.connect()
            let other = try daemon.connect()
            var outcomes: [Int: Int] = [:]
            for trial in 0..<30 {
                #expect(try seeker.call("load", ["url": Fixtures.path("tone.flac"), "play": true]).stateName == "playing")
                let request = try JSONSerialization.data(withJSONObject: [
                    "jsonrpc": "2.0", "id": 1, "method": "seek", "params": ["position": 2.5],
                ])
                try seeker.send(raw: request + Data("\n".utf8))
                usleep(UInt32(trial % 3) * 300)
                _ = trial % 2 == 0 ? try other.call("stop") : try other.call("load", ["url": Fixtures.path("tone.wav")])
                let answer = try seeker.readJSON(timeout: 3)
                let code = answer.errorCode ?? 0
                outcomes[code, default: 0] += 1
                if code == 0 {
                    // The seek landed before the other command came: a real landing, never "idle at 0".
                    let position = answer.result?["position"] as? Double ?? -1
                    #expect(position == 2.5 && answer.stateName == "playing", "trial \(trial): \(answer)")
                } else {
                    // Overtaken (-32002), or the other command came first and the seek found nothing to seek (-32000).
                    #expect(code == -32002 || code == -32000, "trial \(trial): \(answer)")
                }
            }
            #expect(outcomes[-32002, default: 0] > 0, "some seeks were overtaken: \(outcomes)")
        }

        /// `load` with a start at or past the end lands at the end instead of failing.
        @Test func loadWithAStartPastTheEndLandsAtTheEnd() throws {
            let daemon = try DaemonProcess(arguments: ["--device", "null", "--pace", "--speed", "8"])
            let client = try daemon.connect()
            for start in [3.0, 4.5, 1e6] {
                let loaded = try client.call("load", ["url": Fixtures.path("tone.flac"), "start": start])
                #expect(loaded.stateName == "ready", "start \(start): \(loaded)")
                #expect(try client.call("play").stateName == "playing")
                let ended = try waitForStatus(client) { $0.name == "ended" }
                #expect(abs((ended["position"] as? Double ?? 0) - 3.0) < 0.01, "\(ended)")
            }
        }
    }
}
