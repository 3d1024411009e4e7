import Foundation
import Testing
import TonearmTestSupport

#if canImport(Glibc)
    import Glibc
#endif

extension DaemonTests {
    /// Bad input in bulk on the control socket: every line gets a well-formed JSON-RPC answer (or,
    /// for a notification, none), the connection stays usable, and `ping` answers after each round.
    @Suite("Protocol fuzz against the daemon", .serialized, .realDaemon(minutes: 2, alone: true))
    struct DaemonProtocolFuzzTests {
        static let knownCodes: Set<Int> = [-32700, -32600, -32601, -32602, -32603, -32000, -32001, -32002]

        /// Checks one message off the socket: a response with exactly one of result/error and a known
        /// code, or an event notification. Returns the response's id (nil for a notification).
        @discardableResult
        private func checkWellFormed(
            _ message: [String: Any], _ context: @autoclosure () -> String,
            sourceLocation: SourceLocation = #_sourceLocation
        ) -> Any? {
            #expect(message["jsonrpc"] as? String == "2.0", "\(context()): \(message)", sourceLocation: sourceLocation)
            if message["method"] as? String == "event", message["id"] == nil { return nil }
            let hasResult = message["result"] != nil
            let error = message["error"] as? [String: Any]
            #expect(hasResult != (error != nil), "\(context()): \(message)", sourceLocation: sourceLocation)
            if let error {
                #expect(Self.knownCodes.contains(error["code"] as? Int ?? 0), "\(context()): \(message)", sourceLocation: sourceLocation)
                #expect((error["message"] as? String)?.isEmpty == false, "\(context()): \(message)", sourceLocation: sourceLocation)
            }
            #expect(message.keys.contains("id"), "\(context()): \(message)", sourceLocation: sourceLocation)
            return message["id"]
        }

        /// Sends a ping with a unique id and reads up to its answer, checking everything before it.
        /// Returns the messages that came before the ping's answer.
        @discardableResult
        private func sync(_ client: LineClient, _ tag: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> [[String: Any]]
        {
            let id = "sync-\(tag)"
            try client.send(line: #"{"jsonrpc":"2.0","id":"\#(id)","method":"ping"}"#)
            var before: [[String: Any]] = []
            while true {
                guard let line = try client.readLine(timeout: 10) else {
                    throw LineClient.Failure(description: "connection closed before the ping \(id)")
                }
                guard let message = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                    Issue.record("not a JSON object: \(line.prefix(200))", sourceLocation: sourceLocation)
                    continue
                }
                if message["id"] as? String == id {
                    #expect(message["result"] as? String == "pong", sourceLocation: sourceLocation)
                    return before
                }
                checkWellFormed(message, "before \(id)", sourceLocation: sourceLocation)
                before.append(message)
            }
        }

        private func answers(_ messages: [[String: Any]]) -> [[String: Any]] { messages.filter { $0["method"] == nil } }

        @Test func randomBytesAndInvalidUTF8AreParseErrors() throws {
            let daemon = try DaemonProcess(arguments: ["--device", "null"])
            let client = try daemon.connect()
            var random = SeededRandom(seed: 7)
            for round in 0..<20 {
                var batch = Data()
                for _ in 0..<50 {
                    var line = random.bytes(1 + Int(random.next() % 300)).map { $0 == 0x0A ? 0x20 : $0 }
                    if line.allSatisfy({ $0 == 0x20 || $0 == 0x0D || $0 == 0x09 }) { line.append(0x7B) }  // not blank
                    batch.append(contentsOf: line)
                    batch.append(0x0A)
                }
                try client.send(raw: batch)
                let replies = answers(try sync(client, "random-\(round)"))
                #expect(replies.count == 50, "round \(round): one answer per line")
                #expect(replies.allSatisfy { [-32700, -32600].contains($0.errorCode ?? 0) }, "round \(round)")
            }
            // Valid JSON text in invalid UTF-8.
            try client.send(raw: Data([0x7B, 0x22, 0xC3, 0x28, 0x22, 0x3A, 0x31, 0x7D, 0x0A]))
            #expect(answers(try sync(client, "utf8")).first?.errorCode == -32700)
            #expect(daemon.process.isRunning)
        }

        @Test func mutatedRequestsGetWellFormedAnswers() throws {
            let daemon = try DaemonProcess(arguments: ["--device", "null"])
            let client = try daemon.connect()
            let valid = [
                #"{"jsonrpc":"2.0","id":1,"method":"status"}"#,
                #"{"jsonrpc":"2.0","id":2,"method":"load","params":{"url":"\#(Fixtures.path("tone.wav"))","play":true}}"#,
                #"{"jsonrpc":"2.0","id":3,"method":"seek","params":{"position":1.5,"relative":false}}"#,
                #"{"jsonrpc":"2.0","id":"x","method":"pause"}"#,
                #"{"jsonrpc":"2.0","id":4,"method":"subscribe","params":{"events":["transition"],"position_interval":1}}"#,
                #"{"jsonrpc":"2.0","id":5,"method":"stop","params":{}}"#,
            ].map { Array($0.utf8) }
            let alphabet = Array(#"{}[]":,0123456789-+.eEtrufalsn\ "#.utf8)
            var random = SeededRandom(seed: 11)
            for round in 0..<30 {
                for _ in 0..<20 {
                    var line = valid[Int(random.next() % UInt64(valid.count))]
                    for _ in 0..<(1 + Int(random.next() % 4)) {
                        let index = Int(random.next() % UInt64(line.count))
                        switch random.next() % 3 {
                        case 0: line.remove(at: index)
                        case 1: line.insert(alphabet[Int(random.next() % UInt64(alphabet.count))], at: index)
                        default: line[index] = alphabet[Int(random.next() % UInt64(alphabet.count))]
                        }
                        if line.isEmpty { line = Array("{".utf8) }
                    }
                    try client.send(raw: Data(line.map { $0 == 0x0A ? 0x20 : $0 } + [0x0A]))
                }
                try sync(client, "mutated-\(round)")
            }
            #expect(daemon.process.isRunning)
        }

        @Test func wrongTypesOddNumbersDepthAndSizeGetTheRightErrors() throws {
            let daemon = try DaemonProcess(arguments: ["--device", "null"])
            let client = try daemon.connect()
            #expect(try client.call("load", ["url": Fixtures.path("tone.wav")]).stateName == "ready")
            let cases: [(String, Int)] = [
                (#"{"jsonrpc":"2.0","id":1,"method":"seek","params":{"position":"1"}}"#, -32602),
                (#"{"jsonrpc":"2.0","id":1,"method":"seek","params":{"position":1e999}}"#, -32602),
                (#"{"jsonrpc":"2.0","id":1,"method":"seek","params":{"position":-1e999}}"#, -32602),
                (#"{"jsonrpc":"2.0","id":1,"method":"seek","params":{"position":NaN}}"#, -32700),
                (#"{"jsonrpc":"2.0","id":1,"method":"seek","params":{"position":Infinity}}"#, -32700),
                (#"{"jsonrpc":"2.0","id":1,"method":"seek","params":{"position":1,"position":2}}"#, -32700),
                (#"{"jsonrpc":"2.0","id":1,"method":"seek","params":[1.0]}"#, -32602),
                (#"{"jsonrpc":"2.0","id":1,"method":"seek","params":{"position":1,"speed":2}}"#, -32602),
                (#"{"jsonrpc":"2.0","id":1,"method":"load","params":{"url":17}}"#, -32602),
                (#"{"jsonrpc":"2.0","id":1,"method":"load","params":{"url":"\#(Fixtures.path("tone.wav"))","play":"yes"}}"#, -32602),
                (#"{"jsonrpc":"2.0","id":1,"method":"load","params":{"url":"\#(Fixtures.path("tone.wav"))","start":-1}}"#, -32602),
                (#"{"jsonrpc":"2.0","id":1,"method":"subscribe","params":{"position_interval":1e308}}"#, -32602),
                (#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#, -32600),
                (#"{"jsonrpc":"2.0","id":[1],"method":"ping"}"#, -32600),
                (#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#, -32600),
                (#"{"jsonrpc":"2.0","id":1,"method":7}"#, -32600),
                (#"{"jsonrpc":"2.0","id":1,"method":"PING"}"#, -32601),
                (#"{"jsonrpc":"2.0","id":1,"method":"ping","extra":true}"#, -32600),
                (#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]"#, -32600),
                (#"[]"#, -32600),
                (#""ping""#, -32600),
                (#"{"jsonrpc":"2.0","id":1,"method":"ping"} trailing"#, -32700),
                (#"{"jsonrpc":"2.0","id":1e400,"method":"ping"}"#, -32600),
                (#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":"\ud800"}}"#, -32700),
                (String(repeating: "[", count: 50_000), -32700),
                (String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000), -32700),
                (String(repeating: #"{"a":"#, count: 70) + "1" + String(repeating: "}", count: 70), -32700),
            ]
            for (index, (line, code)) in cases.enumerated() {
                try client.send(line: line)
                let replies = answers(try sync(client, "case-\(index)"))
                #expect(
                    replies.count == 1 && replies.first?.errorCode == code,
                    "\(line.prefix(100)) → expected \(code), got \(replies.map { $0.errorCode ?? 0 })")
            }
            // A 1 MiB line, then thousands of tiny ones (and blank lines, which are skipped).
            try client.send(
                line: #"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":""# + String(repeating: "x", count: 1 << 20) + #""}}"#)
            #expect(answers(try sync(client, "huge")).map { $0.errorCode } == [-32600])
            try client.send(raw: Data(String(repeating: "{}\n\n", count: 5000).utf8))
            let tiny = answers(try sync(client, "tiny"))
            #expect(tiny.count == 5000 && tiny.allSatisfy { $0.errorCode == -32600 })
            #expect(try client.call("status").stateName == "ready", "the player is where it was")
        }

        /// Both protocols at once, from concurrent clients, for a few seconds of seeded random
        /// commands (valid and not, command lists, idle): every MPD command or list gets exactly
        /// one `OK` or `ACK`, every JSON-RPC request exactly one well-formed answer in order (a
        /// notification none), positions stay within [0, duration], a subscriber's queue events
        /// never go backwards, and the daemon serves on (the outside passes' issue, fuzz).
        @Test(arguments: [UInt64(31), 32])
        func concurrentClientsOfBothProtocolsKeepTheInvariants(_ seed: UInt64) throws {
            let daemon = try DaemonProcess(arguments: ["--device", "null", "--pace"])
            defer { withExtendedLifetime(daemon) {} }
            let control = try daemon.connect()
            let files = ["tone.wav", "tone.flac", "tone.mp3", "gapless-1.flac", "tone.opus", "tone.m4a"].map(Fixtures.path)
            #expect(try control.call("add", ["urls": files, "play": true]).result != nil)
            let failures = Guarded<[String]>([])
            let counts = Guarded<(mpd: Int, rpc: Int, events: Int)>((0, 0, 0))
            let seconds = 6.0
            let until = Date().addingTimeInterval(seconds)
            let socket = daemon.socketPath
            let mpdSocket = daemon.mpdSocketPath
            var threads: [Thread] = []
            for worker in 0..<3 {
                threads.append(
                    Thread {
                        var random = SeededRandom(seed: seed &* 1000 &+ UInt64(worker))
                        do {
                            let client = try MPDTestClient(path: mpdSocket)
                            while Date() < until {
                                let line = Self.mpdCommand(&random, files)
                                let reply = try client.command(line)
                                if let elapsed = reply["elapsed"].flatMap(Double.init) {
                                    let duration = reply["duration"].flatMap(Double.init) ?? .infinity
                                    if elapsed < 0 || elapsed > duration + 0.001 {
                                        failures.update { $0.append("mpd elapsed \(elapsed) of \(duration)") }
                                    }
                                }
                                counts.update { $0.mpd += 1 }
                            }
                        } catch {
                            failures.update { $0.append("mpd worker \(worker): \(error)") }
                        }
                    })
                threads.append(
                    Thread {
                        var random = SeededRandom(seed: seed &* 2000 &+ UInt64(worker))
                        do {
                            let client = try LineClient(path: socket)
                            var id = 0
                            while Date() < until {
                                let (method, params, notification) = Self.rpcRequest(&random, files)
                                var request: [String: Any] = ["jsonrpc": "2.0", "method": method, "params": params]
                                if !notification {
                                    id += 1
                                    request["id"] = id
                                }
                                try client.send(raw: try JSONSerialization.data(withJSONObject: request) + Data("\n".utf8))
                                guard !notification else { continue }
                                let answer = try client.readJSON(timeout: 15)
                                let hasResult = answer["result"] != nil
                                let error = answer["error"] as? [String: Any]
                                if answer["id"] as? Int != id || hasResult == (error != nil)
                                    || (error.map { !Self.knownCodes.contains($0["code"] as? Int ?? 0) } ?? false)
                                {
                                    failures.update { $0.append("rpc \(method) id \(id): \(answer)") }
                                }
                                if method == "status", let result = answer["result"] as? [String: Any],
                                    let position = result["position"] as? Double
                                {
                                    let duration = result["duration"] as? Double ?? .infinity
                                    if position < 0 || position > duration + 0.001 {
                                        failures.update { $0.append("rpc position \(position) of \(duration)") }
                                    }
                                }
                                counts.update { $0.rpc += 1 }
                            }
                        } catch {
                            failures.update { $0.append("rpc worker \(worker): \(error)") }
                        }
                    })
            }
            threads.append(
                Thread {
                    do {
                        let subscriber = try LineClient(path: socket)
                        _ = try subscriber.call("subscribe", ["events": ["queue"]])
                        var last = -1
                        while Date() < until {
                            guard let event = try? subscriber.readJSON(timeout: 0.5) else { continue }
                            guard let version = (event["params"] as? [String: Any])?["version"] as? Int else { continue }
                            if version < last { failures.update { $0.append("queue event \(version) after \(last)") } }
                            last = version
                            counts.update { $0.events += 1 }
                        }
                    } catch {
                        failures.update { $0.append("subscriber: \(error)") }
                    }
                })
            for thread in threads { thread.start() }
            let deadline = Date().addingTimeInterval(seconds + 40 * Sanitizer.timeScale)
            while threads.contains(where: { !$0.isFinished }) && Date() < deadline { usleep(50_000) }
            let allFinished = threads.allSatisfy { $0.isFinished }
            #expect(allFinished, "a client was left waiting for an answer")
            let found = failures.value
            #expect(found.isEmpty, "\(found.count) broken invariants, first: \(found.prefix(5))")
            let done = counts.value
            #expect(done.mpd > 100 && done.rpc > 100, "\(done)")
            #expect(try control.call("ping")["result"] as? String == "pong")
            #expect(daemon.process.isRunning)
        }

        /// A random MPD command line (or command list, or idle and noidle): valid, out of range, or unknown.
        private static func mpdCommand(_ r: inout SeededRandom, _ files: [String]) -> String {
            func n(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &r) }
            let file = files[n(0...(files.count - 1))]
            switch n(0...25) {
            case 0: return "status"
            case 1: return "currentsong"
            case 2: return "playlistinfo \(n(-1...6))"
            case 3: return "add \"\(file)\""
            case 4: return "addid \"\(file)\" \(n(-2...8))"
            case 5: return "delete \(n(-1...8))"
            case 6: return "deleteid \(n(-1...80))"
            case 7: return "move \(n(0...8)) \(n(-1...8))"
            case 8: return "moveid \(n(-1...80)) \(n(0...8))"
            case 9: return "play \(n(-1...8))"
            case 10: return "pause \(n(0...2))"
            case 11: return "stop"
            case 12: return "next"
            case 13: return "previous"
            case 14: return "seek \(n(0...6)) \(Double(n(-10...40)) / 10)"
            case 15: return "seekcur \(["+", "-", ""][n(0...2)])\(Double(n(0...30)) / 10)"
            case 16: return "setvol \(n(-5...105))"
            case 17: return "\(["repeat", "random", "single", "consume"][n(0...3)]) \(n(0...2))"
            case 18: return "plchanges \(n(-1...400))"
            case 19: return n(0...9) == 0 ? "clear" : "playlistid \(n(-1...80))"
            case 20: return "shuffle"
            case 21: return "command_list_begin\nstatus\nadd \"\(file)\"\nmove 0 \(n(-1...4))\ncommand_list_end"
            case 22: return "command_list_ok_begin\nping\ncurrentsong\ncommand_list_end"
            case 23: return "idle\nnoidle"
            case 24: return "frobnicate \(n(0...9))"
            default: return "ping"
            }
        }

        /// A random JSON-RPC method and params (valid, out of range or of the wrong type), and whether
        /// it goes as a notification.
        private static func rpcRequest(_ r: inout SeededRandom, _ files: [String]) -> (String, [String: Any], Bool) {
            func n(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &r) }
            let notification = n(0...19) == 0
            switch n(0...15) {
            case 0: return ("status", [:], notification)
            case 1: return ("queue", [:], notification)
            case 2: return ("add", ["urls": [files[n(0...(files.count - 1))]], "position": n(-1...6)], notification)
            case 3: return ("remove", ["ids": [n(-1...80)]], notification)
            case 4: return ("move", ["id": n(-1...80), "position": n(-1...8)], notification)
            case 5: return ("play", n(0...1) == 0 ? [:] : ["id": n(-1...80)], notification)
            case 6: return ("pause", [:], notification)
            case 7: return (n(0...5) == 0 ? "stop" : "status", [:], notification)
            case 8: return (n(0...1) == 0 ? "next" : "previous", [:], notification)
            case 9: return ("seek", ["position": Double(n(-100...400)) / 10, "relative": n(0...1) == 0], notification)
            case 10: return ("volume", n(0...1) == 0 ? ["level": n(-10...110)] : ["delta": n(-120...120)], notification)
            case 11: return ("options", ["repeat": n(0...1) == 0, "random": n(0...1) == 0], notification)
            case 12: return ("replay_gain", ["mode": ["off", "track", "album", "auto", "loud"][n(0...4)]], notification)
            case 13: return ("seek", ["position": "x"], notification)
            case 14: return ("nonsense", [:], notification)
            default: return ("ping", [:], notification)
            }
        }

        @Test func halfClosedAndResetConnectionsLeaveTheDaemonServing() throws {
            let daemon = try DaemonProcess(arguments: ["--device", "null"])
            let observer = try daemon.connect()
            for round in 0..<50 {
                do {  // a failure names its round and shows the daemon's log
                    let client = try daemon.connect()
                    switch round % 5 {
                    case 0:  // a request, then half-close: the answer still comes, then end of stream
                        try client.send(line: #"{"jsonrpc":"2.0","id":1,"method":"status"}"#)
                        client.finishSending()
                        #expect(try client.readJSON().result != nil)
                        #expect(try client.readLine() == nil)
                    case 1:  // half a request, then half-close
                        try client.send(raw: Data(#"{"jsonrpc":"2.0","id":1,"met"#.utf8))
                        client.finishSending()
                        _ = try client.readLine()
                    case 2:  // reset mid-request (SO_LINGER 0 sends RST on close)
                        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
                        setsockopt(client.fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
                        try client.send(raw: Data(#"{"jsonrpc":"2.0","id":1,"method":"load","params":{"url":""#.utf8))
                    case 3:  // a slow load asked, then gone before the answer
                        try client.send(
                            line: #"{"jsonrpc":"2.0","id":1,"method":"load","params":{"url":"\#(Fixtures.path("tone.flac"))"}}"#)
                    default:  // subscribed, then gone
                        _ = try client.call("subscribe")
                    }
                    // `client` closes here.
                } catch {
                    Issue.record("round \(round) (case \(round % 5)): \(error)\n\(daemon.log.suffix(3000))")
                    throw error
                }
            }
            usleep(100_000)
            #expect(try observer.call("ping")["result"] as? String == "pong")
            #expect(try observer.call("status").result != nil)
            let fds = try ProcessResources(pid: daemon.process.processIdentifier).fileDescriptors
            #expect(fds < 30, "closed connections were released: \(fds) descriptors")
            #expect(daemon.process.isRunning)
        }
    }
}
