import Foundation
import Testing
import TonearmTestSupport

extension DaemonTests {
    /// The JSON-RPC protocol as any client sees it: answers, errors, events, limits, shutdown.
    @Suite("Daemon protocol", .serialized, .realDaemon(minutes: 1))
    struct DaemonProtocolTests {
        @Test func standardErrorsGetStandardCodes() throws {
            let daemon = try DaemonProcess(arguments: ["--device", "null"])
            let client = try daemon.connect()
            try client.send(line: "{this is not json")
            #expect(try client.readJSON()["error"].map { ($0 as? [String: Any])?["code"] as? Int } == -32700)
            try client.send(line: #"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#)
            #expect((try client.readJSON()).errorCode == -32600)
            try client.send(line: #"{"jsonrpc":"1.0","id":7,"method":"ping"}"#)
            let wrongVersion = try client.readJSON()
            #expect(wrongVersion.errorCode == -32600 && wrongVersion["id"] as? Int == 7)
            #expect(try client.call("dance").errorCode == -32601)
            #expect(try client.call("load", [:]).errorCode == -32602)
            #expect(try client.call("load", ["url": 42]).errorCode == -32602)
            #expect(try client.call("load", ["url": "relative/path.mp3"]).errorCode == -32602)
            #expect(try client.call("load", ["url": "http:///x.mp3"]).errorCode == -32602, "an http URL without a host")
            #expect(try client.call("seek", ["position": "ten"]).errorCode == -32602)
            #expect(try client.call("status", ["verbose": true]).errorMessage?.contains("verbose") == true)
            #expect(try client.call("subscribe", ["events": ["gossip"]]).errorCode == -32602)
            // A notification (no id) gets no answer: the next line answers the ping.
            try client.send(line: #"{"jsonrpc":"2.0","method":"status"}"#)
            #expect(try client.call("ping")["result"] as? String == "pong")
        }

        @Test func rejectedCommandsNameTheStateAndTheAction() throws {
            let daemon = try DaemonProcess(arguments: ["--device", "null"])
            let client = try daemon.connect()
            let play = try client.call("play")
            #expect(play.errorCode == -32000)
            #expect((play.errorData?["state"] as? [String: Any])?["state"] as? String == "idle")
            #expect(play.errorData?["action"] as? String == "play")
            let stop = try client.call("stop")
            #expect(stop.result?["changed"] as? Bool == false)
        }

        @Test func overlongLineIsRefusedAndTheConnectionGoesOn() throws {
            let daemon = try DaemonProcess(arguments: ["--device", "null"])
            let client = try daemon.connect()
            let huge = #"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":""# + String(repeating: "x", count: 200_000) + #""}}"#
            try client.send(line: huge)
            let refused = try client.readJSON()
            #expect(refused.errorCode == -32600)
            #expect(refused.errorMessage?.contains("65536") == true)
            #expect(try client.call("ping")["result"] as? String == "pong")
        }

        @Test func halfClosedOneShotClientStillGetsItsAnswer() throws {
            let daemon = try DaemonProcess(arguments: ["--device", "null"])
            _ = try daemon.connect()
            // What `echo '…' | socat - UNIX-CONNECT:…` does: send, half-close, read.
            let client = try LineClient(path: daemon.socketPath)
            try client.send(line: #"{"jsonrpc":"2.0","id":"a","method":"version"}"#)
            client.finishSending()
            let answer = try client.readJSON()
            #expect(answer["id"] as? String == "a")
            #expect((answer["result"] as? [String: Any])?["version"] is String)
            #expect(try client.readLine() == nil, "the daemon closes after answering")
        }

        @Test func subscribersGetTransitionsPerformanceAndPosition() throws {
            let daemon = try DaemonProcess(arguments: ["--device", "null", "--pace", "--speed", "4"])
            let watcher = try daemon.connect()
            let subscribed = try watcher.call(
                "subscribe", ["events": ["transition", "performance", "position"], "position_interval": 0.1])
            #expect((subscribed.result?["subscribed"] as? [String]) == ["performance", "position", "transition"])
            let control = try daemon.connect()
            #expect(try control.call("load", ["url": Fixtures.path("tone.wav"), "play": true]).stateName == "playing")
            var events: [[String: Any]] = []
            while !events.contains(where: { (($0["to"] as? [String: Any])?["state"] as? String) == "ended" }) {
                let message = try watcher.readJSON()
                #expect(message["method"] as? String == "event" && message["id"] == nil)
                events.append(message["params"] as? [String: Any] ?? [:])
            }
            let transitions = events.filter { $0["type"] as? String == "transition" }
            let path = transitions.map { (($0["to"] as? [String: Any])?["state"] as? String) ?? "?" }
            #expect(path == ["loading", "ready", "playing", "ended"], "\(path)")
            let first = try #require(transitions.first)
            #expect((first["action"] as? [String: Any])?["name"] as? String == "load")
            #expect(first["timestamp"] is Double)
            #expect(events.contains { $0["type"] as? String == "performance" && $0["event"] as? String == "first_audio" })
            let positions = events.filter { $0["type"] as? String == "position" }.compactMap { $0["position"] as? Double }
            #expect(positions.count >= 2 && positions == positions.sorted(), "\(positions)")
        }

        @Test func manyClientsAtOnceAndASlowOneBlocksNoOne() throws {
            let daemon = try DaemonProcess(arguments: ["--device", "null"])
            // A subscriber that never reads.
            let idle = try daemon.connect()
            _ = try idle.call("subscribe")
            let clients = try (0..<30).map { _ in try daemon.connect() }
            for (index, client) in clients.enumerated() {
                try client.send(line: #"{"jsonrpc":"2.0","id":\#(index),"method":"status"}"#)
            }
            for (index, client) in clients.enumerated() {
                let answer = try client.readJSON(timeout: 5)
                #expect(answer["id"] as? Int == index && answer["result"] != nil)
            }
            let control = try daemon.connect()
            for _ in 0..<20 {
                #expect(try control.call("load", ["url": Fixtures.path("tone.wav")], timeout: 5).stateName == "ready")
            }
        }

        @Test func sigtermStopsCleanlyAndRemovesTheSocket() throws {
            let daemon = try DaemonProcess(arguments: ["--device", "null", "--pace"])
            let client = try daemon.connect()
            #expect(try client.call("load", ["url": Fixtures.path("tone.wav"), "play": true]).stateName == "playing")
            #expect(daemon.terminate() == 0, "\(daemon.log)")
            #expect(!FileManager.default.fileExists(atPath: daemon.socketPath))
            #expect(daemon.log.contains("shutting down"))
        }

        /// A bad flag value says what is wrong, on stderr, with exit 64 (the outside passes'
        /// issue, §17): a negative number is a value, not a flag; a socket path too long for
        /// a Unix socket is refused before starting.
        @Test(arguments: [
            (["--buffer-ms", "-1"], "--buffer-ms must be from 10 to 10000"),
            (["--reopen-interval-ms", "-5"], "--reopen-interval-ms must be from 100 to 600000"),
            (["--open-timeout-ms", "-5"], "--open-timeout-ms must be from 100 to 600000"),
            (["--speed", "-2"], "--speed must be above 0"),
            (["--http", "6680"], "--http must be host:port such as 127.0.0.1:6680, or off"),
            (["--socket", "/tmp/" + String(repeating: "s", count: 120)], "longer than a Unix socket allows (107)"),
        ])
        func badFlagsAreAClearUsageError(_ arguments: [String], _ says: String) throws {
            let result = try runTool(DaemonProcess.binary(), ["--device", "null"] + arguments, timeout: 10)
            #expect(result.status == 64, "\(arguments): \(result.output)")
            #expect(result.output.contains(says), "\(arguments): \(result.output)")
        }

        @Test func badConfigurationIsAClearStartupError() throws {
            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            let config = dir.path("bad.toml")
            try "[output]\nbuffer_ms = \"lots\"\n".write(toFile: config, atomically: true, encoding: .utf8)
            let daemon = try DaemonProcess(arguments: ["--config", config])
            daemon.process.waitUntilExit()
            #expect(daemon.process.terminationStatus != 0)
            #expect(daemon.log.contains("output.buffer_ms must be a whole number"), "\(daemon.log)")
        }
    }
}
