import Foundation
import Testing
import TonearmTestSupport

extension DaemonTests {
    /// The library's scan runs at idle priority on its own threads: playback on a device that
    /// paces like a sound card (and runs dry if it is not fed in time) never falters meanwhile.
    @Suite("Daemon plays on while the library scans", .serialized, .realDaemon(minutes: 2, alone: true))
    struct DaemonScanWhilePlayingTests {
        @Test func aFullRescanNeverStarvesPlayback() throws {
            let directory = try TemporaryDirectory()
            defer { directory.remove() }
            let music = directory.path("music")
            // The benchmark's generator: tagged FLAC and MP3 files, a few hundred a second.
            let script = Fixtures.directory.deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("scripts/make-bench-library.py").path
            #expect(try runTool("/usr/bin/python3", [script, "3000", music], timeout: 60).status == 0)
            let config = directory.path("tonearmd.toml")
            try "[library]\nmusic_directory = \"\(music)\"\nscan_on_start = false\nwatch = false\n"
                .write(toFile: config, atomically: true, encoding: .utf8)

            let device = try FaultDevice(speed: 1)
            defer { device.remove() }
            let daemon = try DaemonProcess(arguments: ["--device", device.name, "--config", config], environment: device.environment)
            try withExtendedLifetime(daemon) {
                let watcher = try daemon.connect()
                #expect(try watcher.call("subscribe", ["events": ["performance", "library"]]).result != nil)
                let client = try daemon.connect()
                _ = try client.call("add", ["urls": [Fixtures.path("tone.flac")]])
                _ = try client.call("options", ["repeat": true])
                #expect(try client.call("play").stateName == "playing")
                _ = try readEvents(watcher) { $0.performanceEvent == "first_audio" }

                #expect(try client.call("library.update", ["rescan": true]).result != nil)
                let events = try readEvents(watcher, timeout: 60 * Sanitizer.timeScale) {
                    $0["type"] as? String == "library" && $0["event"] as? String == "scan_finished"
                }
                let finished = try #require(events.last)
                #expect(finished["added"] as? Int == 3000, "\(finished)")
                let faltered = events.compactMap(\.performanceEvent).filter { ["stall", "buffering_started"].contains($0) }
                #expect(faltered.isEmpty, "while scanning \(finished["seconds"] ?? "?") s: \(events)")
                #expect(try client.call("status").stateName == "playing")
            }
        }
    }
}
