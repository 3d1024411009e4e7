import Foundation
import Testing
import TonearmTestSupport

extension DaemonTests {
    /// The real tonearmd on the fault-injecting test device (Tests/FaultDevice): the device paces
    /// playback like a sound card and fails on command; each test checks what reached the device.
    @Suite("Daemon survives output faults", .serialized, .realDaemon(minutes: 1))
    struct DaemonFaultTests {
        static let rate = 44100
        static let bytesPerFrame = 4

        private func start(_ device: FaultDevice, _ extra: [String] = []) throws -> (DaemonProcess, LineClient, LineClient) {
            let daemon = try DaemonProcess(
                arguments: ["--device", device.name, "--reopen-interval-ms", "150"] + extra,
                environment: device.environment)
            let watcher = try daemon.connect()
            #expect(try watcher.call("subscribe", ["events": ["transition", "performance"]]).result != nil)
            return (daemon, try daemon.connect(), watcher)
        }

        /// Everything the device received, as the WAV's PCM: the part before the fault, then the rest from `resume`.
        private func expectReceived(
            _ device: FaultDevice, before cut: Int, thenFrom resume: Int,
            sourceLocation: SourceLocation = #_sourceLocation
        ) throws {
            let reference = try Fixtures.wavPCM("tone.wav")
            let expected = reference.prefix(cut * Self.bytesPerFrame) + reference.dropFirst(resume * Self.bytesPerFrame)
            let received = try device.received()
            #expect(
                received.count == expected.count, "received \(received.count) bytes, expected \(expected.count)",
                sourceLocation: sourceLocation)
            // Where they part says what went wrong: a repeated or a lost piece, and where.
            let parted = zip(received, expected).enumerated().first { $0.element.0 != $0.element.1 }.map { $0.offset / Self.bytesPerFrame }
            #expect(
                received == expected, "the samples differ from frame \(parted.map(String.init) ?? "(none: one is a prefix)")",
                sourceLocation: sourceLocation)
        }

        @Test func underrunIsRecoveredWithoutLosingSamples() throws {
            let device = try FaultDevice(control: ["underrun_after 30000"])
            defer { device.remove() }
            let (daemon, client, watcher) = try start(device)
            defer { withExtendedLifetime(daemon) {} }
            #expect(try client.call("load", ["url": Fixtures.path("tone.wav"), "play": true]).stateName == "playing")
            let events = try readEvents(watcher) { $0.transitionTo == "ended" }
            #expect(events.contains { $0.performanceEvent == "stall" }, "a stall event: \(events)")
            let status = try #require(client.call("status").result)
            #expect(abs((status["position"] as? Double ?? 0) - 3.0) < 0.001, "the position ends at the end: \(status)")
            try expectReceived(device, before: 0, thenFrom: 0)
        }

        @Test func aWriteThatStallsBlocksNoRequest() throws {
            // A 1.5 s stall at 4× speed: far longer than the device's buffer, so it also underruns.
            let device = try FaultDevice(control: ["stall_after 20000 1500"])
            defer { device.remove() }
            let (daemon, client, watcher) = try start(device)
            defer { withExtendedLifetime(daemon) {} }
            #expect(try client.call("load", ["url": Fixtures.path("tone.wav"), "play": true]).stateName == "playing")
            usleep(400_000)  // inside the stall
            for _ in 0..<5 {
                let started = Date()
                let status = try client.call("status")
                #expect(Date().timeIntervalSince(started) < 0.25 * Sanitizer.timeScale, "status answered during the stall")
                #expect(status.stateName == "playing")
            }
            let events = try readEvents(watcher) { $0.transitionTo == "ended" }
            #expect(events.contains { $0.performanceEvent == "stall" })
            try expectReceived(device, before: 0, thenFrom: 0)
        }

        @Test func lostDeviceInterruptsAndPlaybackResumesWhereItWasHeard() throws {
            let cut = Self.rate  // the device vanishes after exactly one second of audio
            let device = try FaultDevice(control: ["vanish_after \(cut)"])
            defer { device.remove() }
            let (daemon, client, watcher) = try start(device)
            defer { withExtendedLifetime(daemon) {} }
            #expect(try client.call("load", ["url": Fixtures.path("tone.wav"), "play": true]).stateName == "playing")
            let lost = try readEvents(watcher, untilAll: [{ $0.transitionTo == "paused" }, { $0.performanceEvent == "device_lost" }])
            #expect(lost.contains { $0.transitionTo == "paused" && $0.actionName == "deviceLost" })
            #expect(
                lost.contains { $0.actionName == "deviceLost" && $0.actionAlias == "audioSessionInterrupted" },
                "the former name goes along for one release")
            #expect(lost.contains { $0.performanceEvent == "device_lost" && ($0["reason"] as? String)?.contains("lost") == true })
            let interrupted = try #require(client.call("status").result)
            #expect((interrupted["interruption"] as? String)?.contains("No such device") == true, "\(interrupted)")
            let heard = try #require(interrupted["position"] as? Double)
            let resume = Int((heard * Double(Self.rate)).rounded())
            // The device held at most its buffer (200 ms) that was never heard.
            #expect(resume <= cut && resume >= cut - Self.rate / 4, "heard \(heard) s of \(cut) frames sent")

            // Still unplugged: the daemon keeps trying (every 150 ms) and stays paused where it was.
            try device.setControl([])
            usleep(500_000)
            let waiting = try #require(client.call("status").result)
            #expect(waiting.name == "paused" && waiting["position"] as? Double == heard && waiting["interruption"] != nil)

            device.plugBack()
            let rest = try readEvents(watcher, untilAll: [{ $0.transitionTo == "ended" }, { $0.performanceEvent == "device_restored" }])
            #expect(rest.contains { $0.performanceEvent == "device_restored" && $0["resumed"] as? Bool == true })
            #expect(rest.contains { $0.actionName == "deviceRestored" && $0.transitionTo == "playing" })
            try expectReceived(device, before: cut, thenFrom: resume)
            #expect(try client.call("status").result?["interruption"] == nil)
        }

        /// A `file:` device on a path that cannot be written opens fine and fails at the first
        /// write, every time: the loss is announced once, with its cause, not every retry.
        @Test func anUnwritableFileDeviceSaysWhyOnce() throws {
            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            let path = dir.path("missing/out.raw")
            let daemon = try DaemonProcess(arguments: [
                "--device", "file:'\(path)',raw", "--pace",
                "--reopen-interval-ms", "150",
            ])
            let watcher = try daemon.connect()
            #expect(try watcher.call("subscribe", ["events": ["transition", "performance"]]).result != nil)
            let client = try daemon.connect()
            #expect(try client.call("load", ["url": Fixtures.path("tone.wav"), "play": true]).stateName == "playing")
            let lost = try readEvents(
                watcher,
                untilAll: [
                    { $0.performanceEvent == "device_lost" },
                    { $0.transitionTo == "paused" },
                ])
            let reason = try #require(lost.first { $0.performanceEvent == "device_lost" }?["reason"] as? String)
            // The load's own play is the only one: the player following it to `playing` does not
            // ask the engine again (which revived the device and announced the loss twice).
            #expect(lost.filter { $0.performanceEvent == "device_lost" }.count == 1, "\(lost)")
            #expect(reason.contains(path) && reason.contains("No such file or directory"), "\(reason)")
            // A dozen retries later: nothing more was announced, and status still says why.
            usleep(2_000_000)
            #expect(try client.call("ping")["result"] as? String == "pong")
            var more: [[String: Any]] = []
            while let message = try? watcher.readJSON(timeout: 0.2) { more.append(message) }
            #expect(more.isEmpty, "announced again: \(more)")
            let status = try #require(client.call("status").result)
            #expect(status.name == "paused" && (status["interruption"] as? String)?.contains(path) == true, "\(status)")
            // Asking to play again is answered: the same loss, announced once more.
            _ = try client.call("play")
            let again = try readEvents(
                watcher,
                untilAll: [
                    { $0.performanceEvent == "device_lost" },
                    { $0.transitionTo == "paused" },
                ])
            #expect(again.filter { $0.performanceEvent == "device_lost" }.count == 1)
            #expect(!again.contains { $0.performanceEvent == "device_restored" }, "\(again)")
            // The directory appears: the device comes back and plays to the end.
            try FileManager.default.createDirectory(atPath: dir.path("missing"), withIntermediateDirectories: true)
            _ = try client.call("play")
            let rest = try readEvents(
                watcher,
                untilAll: [
                    { $0.performanceEvent == "device_restored" },
                    { $0.transitionTo == "ended" },
                ])
            #expect(rest.contains { $0.performanceEvent == "device_restored" })
        }

        @Test func withoutResumeAfterInterruptionTheDeviceComesBackPaused() throws {
            let device = try FaultDevice(speed: 2)
            defer { device.remove() }
            let (daemon, client, watcher) = try start(device, ["--no-resume-after-interruption"])
            defer { withExtendedLifetime(daemon) {} }
            #expect(try client.call("load", ["url": Fixtures.path("tone.wav"), "play": true]).stateName == "playing")
            _ = try waitForStatus(client) { ($0["position"] as? Double ?? 0) > 0.5 }
            device.unplug()
            _ = try readEvents(watcher) { $0.transitionTo == "paused" }
            let sent = try device.received().count / Self.bytesPerFrame
            let heard = try #require(client.call("status").result?["position"] as? Double)
            device.plugBack()
            let restored = try readEvents(watcher) { $0.performanceEvent == "device_restored" }
            #expect(restored.last?["resumed"] as? Bool == false)
            let after = try #require(client.call("status").result)
            #expect(after.name == "paused" && after["position"] as? Double == heard && after["interruption"] == nil, "\(after)")
            #expect(try client.call("play").stateName == "playing")
            _ = try readEvents(watcher) { $0.transitionTo == "ended" }
            try expectReceived(device, before: sent, thenFrom: Int((heard * Double(Self.rate)).rounded()))
        }

        @Test func whatTheUserAsksDuringAnOutageIsKept() throws {
            let device = try FaultDevice(speed: 2)
            defer { device.remove() }
            let (daemon, client, watcher) = try start(device)
            defer { withExtendedLifetime(daemon) {} }
            #expect(try client.call("load", ["url": Fixtures.path("tone.wav"), "play": true]).stateName == "playing")
            _ = try waitForStatus(client) { ($0["position"] as? Double ?? 0) > 0.3 }
            device.unplug()
            _ = try readEvents(watcher) { $0.transitionTo == "paused" }

            // A pause asked while the device is away: its return must not undo it.
            #expect(try client.call("pause").result?["changed"] as? Bool == false)
            device.plugBack()
            let restored = try readEvents(watcher) { $0.performanceEvent == "device_restored" }
            #expect(restored.last?["resumed"] as? Bool == false)
            #expect(try client.call("status").result?.name == "paused")

            // Play while the device is away: accepted, reported as still interrupted, and played once it is back.
            device.unplug()
            #expect(try client.call("play").stateName == "playing")
            let refused = try readEvents(watcher) { $0.transitionTo == "paused" }
            #expect(refused.last?.actionName == "deviceLost")
            #expect((try client.call("status").result?["interruption"] as? String)?.isEmpty == false)
            device.plugBack()
            let ended = try readEvents(watcher, untilAll: [{ $0.transitionTo == "ended" }, { $0.performanceEvent == "device_restored" }])
            #expect(ended.contains { $0.performanceEvent == "device_restored" && $0["resumed"] as? Bool == true })
        }

        @Test(arguments: ["EBUSY", "ENOENT"])
        func busyOrMissingDeviceIsRecoverableAndRetryPlays(_ error: String) throws {
            let device = try FaultDevice(control: ["refuse_open \(error)"])
            defer { device.remove() }
            let (daemon, client, _) = try start(device, ["--no-wait-for-device"])
            defer { withExtendedLifetime(daemon) {} }
            let load = try client.call("load", ["url": Fixtures.path("tone.wav")])
            #expect(load.errorCode == -32001, "\(load)")
            #expect(load.errorData?["kind"] as? String == "device_unavailable")
            #expect(load.errorData?["recoverable"] as? Bool == true)
            #expect(try client.call("status").result?.name == "failed")
            #expect(try client.call("retry").errorCode == -32001, "still refused")
            try device.setControl([])
            #expect(try client.call("retry").stateName == "ready")
            #expect(try client.call("play").stateName == "playing")
            _ = try waitForStatus(client) { $0.name == "ended" }
            try expectReceived(device, before: 0, thenFrom: 0)
        }

        /// `output.wait_for_device` (the default): a device missing or busy at load is waited for,
        /// as a lost one: the load is ready, a play is answered with the interruption, and the
        /// item plays, every sample, once the device appears, with no retry.
        @Test(arguments: ["EBUSY", "ENOENT"])
        func aDeviceThatIsNotThereYetIsWaitedFor(_ error: String) throws {
            let device = try FaultDevice(control: ["refuse_open \(error)"])
            defer { device.remove() }
            let (daemon, client, watcher) = try start(device)
            defer { withExtendedLifetime(daemon) {} }
            #expect(try client.call("load", ["url": Fixtures.path("tone.wav")]).stateName == "ready")
            _ = try client.call("play")
            let lost = try readEvents(watcher, untilAll: [{ $0.transitionTo == "paused" }, { $0.performanceEvent == "device_lost" }])
            #expect(lost.contains { $0.actionName == "deviceLost" })
            let waiting = try #require(client.call("status").result)
            #expect(
                waiting.name == "paused" && waiting["interruption"] != nil && waiting["position"] as? Double == 0,
                "\(waiting)")
            usleep(400_000)
            #expect(try client.call("status").stateName == "paused", "still waiting")
            try device.setControl([])
            let rest = try readEvents(watcher, untilAll: [{ $0.performanceEvent == "device_restored" }, { $0.transitionTo == "ended" }])
            #expect(rest.contains { $0.actionName == "deviceRestored" && $0.transitionTo == "playing" })
            try expectReceived(device, before: 0, thenFrom: 0)
        }

        @Test func deviceThatCannotPauseResumesAtWhatWasHeard() throws {
            let device = try FaultDevice(speed: 2, canPause: false)
            defer { device.remove() }
            // Paused at once (no fade written after what it holds): what it held unheard is dropped.
            let (daemon, client, _) = try start(device, ["--no-pause-fade"])
            defer { withExtendedLifetime(daemon) {} }
            #expect(try client.call("load", ["url": Fixtures.path("tone.wav"), "play": true]).stateName == "playing")
            _ = try waitForStatus(client) { ($0["position"] as? Double ?? 0) > 1.0 }
            let pause = try client.call("pause")
            #expect(pause.stateName == "paused")
            usleep(200_000)
            let sent = try device.received().count / Self.bytesPerFrame
            let held = try #require(client.call("status").result?["position"] as? Double)
            let resume = Int((held * Double(Self.rate)).rounded())
            #expect(resume < sent, "the device had frames queued that it dropped: heard \(resume) of \(sent)")
            #expect(try client.call("play").stateName == "playing")
            _ = try waitForStatus(client) { $0.name == "ended" }
            try expectReceived(device, before: sent, thenFrom: resume)
        }
    }
}

/// Reads event notifications until one matches `stop` (included), within `timeout` seconds.
func readEvents(
    _ watcher: LineClient, timeout: Double = 15,
    until stop: @escaping ([String: Any]) -> Bool
) throws -> [[String: Any]] {
    try readEvents(watcher, timeout: timeout, untilAll: [stop])
}

/// Reads event notifications until each condition matched one of them. Transitions and
/// performance events travel on separate streams, so their relative order is not fixed.
func readEvents(
    _ watcher: LineClient, timeout: Double = 15,
    untilAll conditions: [([String: Any]) -> Bool]
) throws -> [[String: Any]] {
    let deadline = Date().addingTimeInterval(timeout)
    var events: [[String: Any]] = []
    var pending = Array(conditions.indices)
    while !pending.isEmpty {
        let remaining = deadline.timeIntervalSinceNow
        guard remaining > 0 else { throw LineClient.Failure(description: "no matching event; got \(events)") }
        let message = try watcher.readJSON(timeout: remaining)
        guard let event = message["params"] as? [String: Any], message["method"] as? String == "event" else { continue }
        events.append(event)
        pending.removeAll { conditions[$0](event) }
    }
    return events
}

extension Dictionary where Key == String, Value == Any {
    var transitionTo: String? { (self["to"] as? [String: Any])?["state"] as? String }
    var actionName: String? { (self["action"] as? [String: Any])?["name"] as? String }
    var actionAlias: String? { (self["action"] as? [String: Any])?["alias"] as? String }
    var performanceEvent: String? { self["type"] as? String == "performance" ? self["event"] as? String : nil }
}
