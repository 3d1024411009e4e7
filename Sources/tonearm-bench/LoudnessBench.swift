import Foundation
import TonearmRigs

extension Runner {
    /// Loudness measurement's budgets (#28): measuring a file (`tonearm-loudness` and
    /// `tonearm-measure`) against the C floor's plain decode of it, and the real-time threads'
    /// CPU while measurements run beside playback.
    func loudness() throws {
        for format in ["flac", "mp3", "ogg"] {
            var perMinute: [Double] = []
            var ratios: [Double] = []
            for _ in 0..<repeats {
                let measuring = try measuringCPU(file(600, format))
                let floorCPU = try Child.spawn(floor, [file(600, format)]).wait()
                perMinute.append(measuring * 60 / 600 * 1000)
                ratios.append(measuring / floorCPU)
            }
            report.add("loudness \(format): measuring CPU per minute of audio", "ms", perMinute)
            report.add("loudness \(format): measuring / decode floor", "ratio", ratios, budget: .atMost(1.15))
        }

        // Playing paced at 1×, first alone, then while sixteen 10-minute files are measured in
        // the background: the library's songs (links to the bench's files: each path is a file
        // of its own to the daemon), scanned once the first window is over. The queue's items
        // are measured ahead only under a mode that levels by loudness.
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let music = directory.path("music")
        try FileManager.default.createDirectory(atPath: music, withIntermediateDirectories: true)
        for format in ["mp3", "ogg", "opus", "m4a"] {
            for copy in 0..<4 {
                try FileManager.default.createSymbolicLink(atPath: music + "/\(copy).\(format)", withDestinationPath: file(600, format))
            }
        }
        let config = directory.path("tonearmd.toml")
        try "[library]\nmusic_directory = \"\(music)\"\nscan_on_start = false\nwatch = false\n"
            .write(toFile: config, atomically: true, encoding: .utf8)
        let running = try RunningDaemon(daemon, ["--device", "null", "--pace", "--config", config])
        defer { _ = running.stop() }
        let control = try running.client()
        _ = try control.call("load", ["url": file(600, "flac"), "play": true])
        _ = try control.call("replay_gain", ["mode": "auto"])
        try waitUntilMeasured(control)  // the playing file itself, measured first of all
        let alone = realTimeThreadsCPU(running)
        _ = try control.call("library.update")
        func songs() throws -> [[String: Any]] {
            ((try control.call("library.search", ["query": ""])["result"] as? [String: Any])?["songs"] as? [[String: Any]]) ?? []
        }
        let scanned = monotonic() + 60
        while try songs().count < 16 {
            guard monotonic() < scanned else { throw BenchError("the library was not scanned within 60 s") }
            sleep(seconds: 0.05)
        }
        let measuringBeside = realTimeThreadsCPU(running)
        let pending = try songs().filter { $0["loudness"] == nil }.count
        guard pending > 0 else { throw BenchError("the measurements ended within the window: lengthen the files") }
        report.add("loudness: decoder + output threads' CPU while playing", "% of a core", [alone])
        report.add("loudness: the same while files are measured", "% of a core", [measuringBeside])
        report.add("loudness: real-time threads' CPU measuring / alone", "ratio", [measuringBeside / alone], budget: .atMost(1.10))

        // Under `loudness`, a file started unmeasured is measured on the way by the decoder.
        let leveling = try RunningDaemon(daemon, ["--device", "null", "--pace"])
        defer { _ = leveling.stop() }
        let leveled = try leveling.client()
        _ = try leveled.call("replay_gain", ["mode": "loudness"])
        _ = try leveled.call("load", ["url": file(600, "flac"), "play": true])
        sleep(seconds: 1)
        report.add("loudness: decoder + output threads' CPU measuring on the way", "% of a core", [realTimeThreadsCPU(leveling)])
    }

    /// Waits until every queue item is measured.
    private func waitUntilMeasured(_ control: LineClient) throws {
        let deadline = monotonic() + 120
        while monotonic() < deadline {
            let items = (try control.call("loudness")["result"] as? [String: Any])?["items"] as? [[String: Any]] ?? []
            if items.allSatisfy({ $0["loudness"] is [String: Any] }) { return }
            sleep(seconds: 0.05)
        }
        throw BenchError("not measured within 120 s")
    }

    /// CPU seconds the measuring threads spend on `path`, queued and not played: the keeper's
    /// books and the decoding and metering (the kernel keeps 15 characters of a thread's name).
    private func measuringCPU(_ path: String) throws -> Double {
        let running = try RunningDaemon(daemon, ["--device", "null"])
        defer { _ = running.stop() }
        let control = try running.client()
        // Queue items are measured ahead only under a mode that levels by loudness.
        _ = try control.call("replay_gain", ["mode": "auto"])
        let threads = ["tonearm-loudnes", "tonearm-measure"]
        func spent(_ sample: ProcessSample) -> Double { threads.reduce(0) { $0 + (sample.cpuByThreadName[$1] ?? 0) } }
        let before = spent(running.sample)
        guard try control.call("add", ["urls": [path]])["result"] != nil else { throw BenchError("add \(path) failed") }
        try waitUntilMeasured(control)
        return (spent(running.sample) - before) / 1e9
    }

    /// The decoder's and the output's CPU over a window, % of a core.
    private func realTimeThreadsCPU(_ running: RunningDaemon) -> Double {
        let threads = ["tonearm-decoder", "tonearm-output"]
        let (before, start) = (running.sample, monotonic())
        sleep(seconds: window)
        let (after, end) = (running.sample, monotonic())
        let spent = threads.reduce(0.0) { $0 + (after.cpuByThreadName[$1] ?? 0) - (before.cpuByThreadName[$1] ?? 0) }
        return spent / 1e9 / (end - start) * 100
    }
}
