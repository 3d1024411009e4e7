import Foundation
import TonearmRigs

extension Runner {
    /// Letting the device sleep (#29): `play` → first audio when the device was released
    /// (`output.release_after_s = 0`: closed at the pause, opened again by the play, the
    /// decoder refilled from the paused position), beside the same play with the device kept
    /// open, on the `null` device.
    func release() throws {
        for releases in [true, false] {
            let releaseAfter = releases ? "0" : "-1"
            let config = try TemporaryDirectory()
            defer { config.remove() }
            try "[output]\nrelease_after_s = \(releaseAfter)\n".write(toFile: config.path("t.toml"), atomically: true, encoding: .utf8)
            let running = try RunningDaemon(daemon, ["--device", "null", "--pace", "--config", config.path("t.toml")])
            defer { _ = running.stop() }
            let control = try running.client()
            let watcher = try running.client()
            _ = try watcher.call("subscribe", ["events": ["performance"]])
            var latencies: [Double] = []
            for index in 0..<Swift.max(repeats * 4, 10) {
                _ = try control.call("load", ["url": file(60, index % 2 == 0 ? "flac" : "mp3"), "play": true])
                try waitForEvent(watcher) { $0["event"] as? String == "first_audio" }
                sleep(seconds: 0.2)
                _ = try control.call("pause")
                let deadline = monotonic() + 5
                while deviceOpen(try control.call("status").result) == releases {
                    guard monotonic() < deadline else { throw BenchError("the device was not released") }
                    usleep(1000)
                }
                sleep(seconds: 0.05)
                let start = monotonic()
                _ = try control.call("play")
                try waitForEvent(watcher) { $0["event"] as? String == "first_audio" }
                latencies.append((monotonic() - start) * 1000)
            }
            if releases {
                report.add("play after a release → first audio event (null)", "ms", latencies, budget: .atMost(50))
            } else {
                report.add("play, device kept open → first audio event (null)", "ms", latencies)
            }
        }
    }

    private func deviceOpen(_ status: [String: Any]?) -> Bool? {
        (status?["output"] as? [String: Any])?["open"] as? Bool
    }
}
