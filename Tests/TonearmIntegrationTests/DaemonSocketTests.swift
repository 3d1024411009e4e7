import Foundation
import Testing
import TonearmProtocol
import TonearmTestSupport

extension DaemonTests {
    /// The control socket and its clients: one daemon per socket, stale and bad paths, running
    /// out of descriptors, too many clients, clients answered for themselves, and a device open
    /// that never returns holding none of them up.
    @Suite("Daemon's control socket and its clients", .serialized, .realDaemon(minutes: 2))
    struct DaemonSocketTests {
        /// 3 and 4. Two clients load at nearly the same moment: each answer describes its own
        /// load, and the engine's news of the replaced item never reaches the new one.
        @Test func closeLoadsFromTwoClientsAnswerForThemselves() throws {
            let daemon = try DaemonProcess(arguments: ["--device", "null", "--pace"])
            let a = try daemon.connect()
            let b = try daemon.connect()
            let good = Fixtures.path("tone.flac")
            let missing = "/nonexistent/nothing.flac"
            for trial in 0..<60 {
                let (first, second) = trial % 2 == 0 ? (good, missing) : (missing, good)
                func request(_ url: String) throws -> Data {
                    try JSONSerialization.data(withJSONObject: ["jsonrpc": "2.0", "id": trial, "method": "load", "params": ["url": url]])
                        + Data("\n".utf8)
                }
                try a.send(raw: request(first))
                usleep(UInt32(trial % 7) * 1000)
                try b.send(raw: request(second))
                let answerA = try a.readJSON(timeout: 5)
                let answerB = try b.readJSON(timeout: 5)
                for (answer, url) in [(answerA, first), (answerB, second)] {
                    let media = (answer["result"] as? [String: Any])?["media"] as? [String: Any]
                    if url == good {
                        #expect(media?["url"] as? String == good || answer.errorCode == -32002, "trial \(trial) \(url): \(answer)")
                    } else {
                        #expect(answer.errorCode == -32001 || answer.errorCode == -32002, "trial \(trial) \(url): \(answer)")
                        #expect(answer.result == nil, "a missing file never answers success: \(answer)")
                    }
                }
                // The load the daemon took last decides the state (two connections: either may be
                // read first). The state is one load's own outcome, never a mix of the two; an
                // overtaken load's rival is the last one.
                let status = try #require(a.call("status").result)
                let error = (status["state"] as? [String: Any])?["error"] as? [String: Any]
                let goodWon = status.name == "ready" && (status["media"] as? [String: Any])?["url"] as? String == good
                let missingWon =
                    status.name == "failed" && (error?["message"] as? String)?.contains("nothing.flac") == true
                    && status["media"] is NSNull
                #expect(goodWon || missingWon, "trial \(trial): \(status)")
                let goodAnswer = first == good ? answerA : answerB
                let missingAnswer = first == good ? answerB : answerA
                if goodAnswer.errorCode == -32002 { #expect(missingWon, "trial \(trial): \(status)") }
                if missingAnswer.errorCode == -32002 { #expect(goodWon, "trial \(trial): \(status)") }
            }
        }

        /// A device whose open never returns (a FIFO nobody reads): each load is answered
        /// `device_unavailable` within `output.open_timeout_ms`, the stuck open does not pile up
        /// threads or hold later loads, SIGTERM ends the daemon at once, and once the device
        /// answers again a load plays.
        @Test func aDeviceOpenThatNeverReturnsHoldsNothingUp() throws {
            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            let fifo = dir.path("out.fifo")
            #expect(mkfifo(fifo, 0o600) == 0)
            let device = "file:'\(fifo)',raw"
            for reader in [false, true] {
                let daemon = try DaemonProcess(arguments: ["--device", device, "--open-timeout-ms", "500", "--no-wait-for-device"])
                let client = try daemon.connect()
                let threadsBefore = try ProcessResources(pid: daemon.process.processIdentifier).threads
                for attempt in 0..<4 {
                    let started = Date()
                    let load = try client.call("load", ["url": Fixtures.path("tone.wav"), "play": attempt % 2 == 0])
                    let took = Date().timeIntervalSince(started)
                    #expect(load.errorCode == -32001, "attempt \(attempt): \(load)")
                    #expect(load.errorData?["kind"] as? String == "device_unavailable")
                    #expect(load.errorMessage?.contains(fifo) == true, "\(load)")
                    #expect(took < 2, "answered in \(took) s")
                }
                #expect(try client.call("ping")["result"] as? String == "pong")
                let threadsAfter = try ProcessResources(pid: daemon.process.processIdentifier).threads
                #expect(threadsAfter <= threadsBefore + 1, "one stuck open at most: \(threadsBefore) → \(threadsAfter)")
                if reader {
                    // A reader shows up: the stuck open returns (and is closed by its own thread);
                    // the next load opens the device.
                    let fd = open(fifo, O_RDONLY | O_NONBLOCK)
                    #expect(fd >= 0)
                    defer { close(fd) }
                    var loaded: [String: Any] = [:]
                    for _ in 0..<40 {
                        loaded = try client.call("load", ["url": Fixtures.path("tone.wav")])
                        if loaded.stateName == "ready" { break }
                        usleep(50_000)
                    }
                    #expect(loaded.stateName == "ready", "\(loaded)")
                }
                let started = Date()
                #expect(daemon.terminate(timeout: 5) == 0)
                #expect(Date().timeIntervalSince(started) < 3, "SIGTERM is not held up by the stuck open")
            }
        }

        /// A second daemon on a live daemon's socket refuses to start and names it; a stale
        /// socket file (nobody listening) is still replaced; and SIGHUP leaves the daemon serving.
        @Test func aSecondDaemonRefusesALiveSocket() throws {
            let first = try DaemonProcess(arguments: ["--device", "null"])
            let client = try first.connect()
            let second = try DaemonProcess(arguments: ["--device", "null", "--socket", first.socketPath])
            second.process.waitUntilExit()
            #expect(second.process.terminationStatus != 0)
            #expect(second.log.contains("pid \(first.process.processIdentifier)"), "\(second.log)")
            #expect(try client.call("ping")["result"] as? String == "pong", "the first still serves")
            kill(first.process.processIdentifier, SIGHUP)
            usleep(100_000)
            #expect(try first.connect().call("ping")["result"] as? String == "pong", "SIGHUP is ignored")
            #expect(first.terminate() == 0)
            #expect(!FileManager.default.fileExists(atPath: first.socketPath), "a clean exit removes its socket")
        }

        @Test func aStaleSocketFileIsReplaced() throws {
            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            let path = dir.path("stale.sock")
            // A socket file nobody listens on, as a daemon killed with SIGKILL leaves behind.
            let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            let bound = bindUnixSocket(fd, path)
            close(fd)
            #expect(bound == 0)
            let daemon = try DaemonProcess(arguments: ["--device", "null", "--socket", path])
            let connected = try #require(LineClient.waitingForSocket(path), "the daemon replaced the stale socket: \(daemon.log)")
            #expect(try connected.call("ping")["result"] as? String == "pong")
        }

        @Test func anEmptySocketPathIsRefused() throws {
            let daemon = try DaemonProcess(arguments: ["--device", "null", "--socket", ""])
            daemon.process.waitUntilExit()
            #expect(daemon.process.terminationStatus != 0)
            #expect(daemon.log.contains("--socket needs a path"), "\(daemon.log)")
        }

        /// Out of file descriptors, accept pauses instead of spinning a core, and the daemon
        /// serves the clients it has and takes new ones once descriptors are free again.
        @Test func runningOutOfDescriptorsDoesNotSpin() throws {
            let daemon = try DaemonProcess(arguments: ["--device", "null"])
            let pid = daemon.process.processIdentifier
            let first = try daemon.connect()
            #expect(try first.call("ping")["result"] as? String == "pong")
            // A descriptor table with room for a few more clients only.
            let inUse = try ProcessResources(pid: pid).fileDescriptors
            // Glibc's prlimit(2) wrapper is not visible to Swift; util-linux's prlimit(1) is its front.
            let prlimit = Process()
            prlimit.executableURL = URL(fileURLWithPath: "/usr/bin/prlimit")
            prlimit.arguments = ["--pid", "\(pid)", "--nofile=\(inUse + 6):\(inUse + 6)"]
            try prlimit.run()
            prlimit.waitUntilExit()
            #expect(prlimit.terminationStatus == 0)
            var clients: [LineClient] = []
            for _ in 0..<20 { clients.append(try LineClient(path: daemon.socketPath)) }
            usleep(300_000)
            let before = try ProcessResources.cpuSeconds(pid: pid)
            usleep(1_500_000)
            let used = try ProcessResources.cpuSeconds(pid: pid) - before
            #expect(used < 0.3, "the daemon used \(used) s of CPU in 1.5 s while out of descriptors")
            #expect(try first.call("ping")["result"] as? String == "pong", "connected clients are still served")
            #expect(daemon.log.contains("cannot accept a client"), "\(daemon.log)")
            // Room again: the waiting clients are taken and served.
            clients.removeAll()
            var answered = false
            for _ in 0..<40 where !answered {
                answered = (try? LineClient(path: daemon.socketPath).call("ping")["result"] as? String) == "pong"
                if !answered { usleep(100_000) }
            }
            #expect(answered, "a new client is served once descriptors are free")
        }

        /// Clients beyond `control.max_clients` are told so and closed; the others are served,
        /// and a place that frees up is taken again.
        @Test func clientsBeyondTheLimitAreToldAndClosed() throws {
            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            let config = dir.path("tonearmd.toml")
            try "[control]\nmax_clients = 5\n".write(toFile: config, atomically: true, encoding: .utf8)
            let daemon = try DaemonProcess(arguments: ["--device", "null", "--config", config])
            var clients = try (0..<5).map { _ in try daemon.connect() }
            for client in clients { #expect(try client.call("ping")["result"] as? String == "pong") }
            let extra = try daemon.connect()
            let refusal = try extra.readJSON(timeout: 5)
            #expect(refusal.errorCode == -32003, "\(refusal)")
            #expect(try extra.readLine(timeout: 5) == nil, "then the connection is closed")
            clients.removeLast()
            usleep(100_000)
            #expect(try daemon.connect().call("ping")["result"] as? String == "pong", "a freed place is taken again")
            #expect(try clients[0].call("ping")["result"] as? String == "pong")
        }
    }
}
