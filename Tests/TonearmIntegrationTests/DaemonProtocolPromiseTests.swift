import Foundation
import Testing
import TonearmTestSupport

extension DaemonTests {
    /// Positions, ids, notifications and subscriptions as the protocol page promises them.
    @Suite("Daemon keeps the protocol's promises", .serialized, .realDaemon(minutes: 3))
    struct DaemonProtocolPromiseTests {
        /// A position is never before the item's start, whatever the decoder's first frame
        /// (Opus's pre-skip), in a seek's answer, in `status` and in MPD's `elapsed`.
        @Test func positionsAreNeverNegative() throws {
            let daemon = try DaemonProcess(arguments: ["--device", "null", "--pace"])
            defer { withExtendedLifetime(daemon) {} }
            let client = try daemon.connect()
            #expect(try client.call("load", ["url": Fixtures.path("tone.opus")]).stateName == "ready")
            let seek = try client.call("seek", ["position": 0])
            #expect((seek.result?["position"] as? Double ?? -1) >= 0, "\(seek)")
            let status = try #require(client.call("status").result)
            #expect((status["position"] as? Double ?? -1) >= 0, "\(status)")
            let mpd = try daemon.connectMPD()
            let elapsed = try #require(mpd.command("status")["elapsed"].flatMap(Double.init))
            #expect(elapsed >= 0)
            #expect(!(try mpd.command("status")).description.contains("elapsed: -"))
        }

        /// Every finite position clamps to [0, duration].
        @Test(arguments: [(-5.0, 0.0), (1e8, 3.0), (1e9, 3.0), (1e300, 3.0), (-1e300, 0.0)])
        func everyFinitePositionClamps(_ position: Double, _ landed: Double) throws {
            let daemon = try DaemonProcess(arguments: ["--device", "null", "--pace"])
            defer { withExtendedLifetime(daemon) {} }
            let client = try daemon.connect()
            #expect(try client.call("load", ["url": Fixtures.path("tone.wav")]).stateName == "ready")
            let seek = try client.call("seek", ["position": position])
            #expect(abs((seek.result?["position"] as? Double ?? -1) - landed) < 0.001, "\(position): \(seek)")
        }

        /// A notification gets no answer, even an error; an id comes back exactly
        /// as it was sent.
        @Test func notificationsGetNoAnswerAndIdsComeBackAsSent() throws {
            let daemon = try DaemonProcess(arguments: ["--device", "null"])
            defer { withExtendedLifetime(daemon) {} }
            let client = try daemon.connect()
            try client.send(line: #"{"jsonrpc":"2.0","method":"stop","params":[1]}"#)
            try client.send(line: #"{"jsonrpc":"2.0","method":"volume","params":{"level":"loud"}}"#)
            for id in ["9007199254740993", "-12345678901234567890", "1.50", "1e2", "0"] {
                try client.send(line: #"{"jsonrpc":"2.0","id":\#(id),"method":"ping"}"#)
                let answer = try #require(try client.readLine(timeout: 5))
                #expect(answer.hasPrefix(#"{"id":\#(id),"#), "sent \(id), got \(answer)")
            }
        }

        /// A `subscribe` replaces the one before: while the queue changes all the time and
        /// the client subscribes again and again, its queue events never repeat or go back.
        @Test func resubscribingNeverRepeatsEvents() throws {
            let daemon = try DaemonProcess(arguments: ["--device", "null"])
            defer { withExtendedLifetime(daemon) {} }
            let watcher = try daemon.connect()
            let adds = 300
            let path = daemon.socketPath
            let adder = Thread {
                guard let client = try? LineClient(path: path) else { return }
                for _ in 0..<adds { _ = try? client.call("add", ["urls": [Fixtures.path("tone.wav")]]) }
            }
            #expect(try watcher.call("subscribe", ["events": ["queue"]]).result != nil)
            adder.start()
            for _ in 0..<100 { #expect(try watcher.call("subscribe", ["events": ["queue"]]).result != nil) }
            var events = watcher.notifications
            let deadline = Date().addingTimeInterval(20)
            func versions() -> [Int] {
                events.compactMap { event in
                    let params = event["params"] as? [String: Any]
                    return params?["type"] as? String == "queue" ? params?["version"] as? Int : nil
                }
            }
            while versions().last != adds && Date() < deadline {
                guard let line = try watcher.readLine(timeout: 5) else { break }
                if let event = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] { events.append(event) }
            }
            let seen = versions()
            #expect(seen.last == adds, "the last change was told: \(seen.suffix(5))")
            let backwards = zip(seen, seen.dropFirst()).filter { $0.0 >= $0.1 }
            #expect(backwards.isEmpty, "repeated or backwards: \(backwards.prefix(10))")
        }
    }
}
