import Foundation
import Testing
import TonearmTestSupport

extension DaemonTests {
    /// Every loaded item ends, and the engine plays only when the state says so (the outside
    /// passes' issue, §13): on a device that never blocks, an item can play to its end within
    /// the time a load's reply takes.
    @Suite("Daemon ends every item it plays", .serialized, .realDaemon(minutes: 4))
    struct DaemonItemEndTests {
        /// A load made while another item plays, back to back with the next, on unpaced `null`:
        /// each second item of a pair reaches `ended`. It used to start playing before the
        /// player said so (the engine kept the previous item's play state), end before the
        /// player's play, and then stay `playing` at its end for good.
        @Test func anItemLoadedWhileAnotherPlaysEnds() throws {
            let daemon = try DaemonProcess(arguments: ["--device", "null"])
            defer { withExtendedLifetime(daemon) {} }
            let client = try daemon.connect()
            let files = [Fixtures.path("tone.m4a"), Fixtures.path("mono48k.wav")]
            let pairs = Sanitizer.active == nil ? 300 : 60
            for pair in 0..<pairs {
                _ = try client.call("load", ["url": files[pair % 2], "play": true])
                let second = try client.call("load", ["url": files[(pair + 1) % 2], "play": true])
                #expect(second.result != nil, "pair \(pair): \(second)")
                let deadline = Date().addingTimeInterval(5 * Sanitizer.timeScale)
                var status: [String: Any] = [:]
                while Date() < deadline {
                    status = try #require(client.call("status").result)
                    if status.name == "ended" { break }
                    usleep(2_000)
                }
                guard status.name == "ended" else {
                    Issue.record("pair \(pair): the item never ended: \(status)")
                    return
                }
            }
        }

        /// `load` without `play` while something plays: the new item waits, ready and silent,
        /// until `play` (its position stays at the start), as the state says.
        @Test func anItemLoadedWithoutPlayWaitsReady() throws {
            let daemon = try DaemonProcess(arguments: ["--device", "null", "--pace"])
            defer { withExtendedLifetime(daemon) {} }
            let client = try daemon.connect()
            #expect(try client.call("load", ["url": Fixtures.path("tone.flac"), "play": true]).stateName == "playing")
            usleep(200_000)
            #expect(try client.call("load", ["url": Fixtures.path("tone.wav")]).stateName == "ready")
            usleep(400_000)
            let waiting = try #require(client.call("status").result)
            #expect(waiting.name == "ready")
            #expect(waiting["position"] as? Double == 0, "the ready item is not playing: \(waiting)")
            #expect(try client.call("play").stateName == "playing")
            _ = try waitForStatus(client) { ($0["position"] as? Double ?? 0) > 0.1 }
        }
    }
}
