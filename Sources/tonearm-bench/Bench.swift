import ArgumentParser
import Foundation
import Synchronization
import TonearmRigs

#if canImport(Glibc)
    import Glibc
#endif

/// Measures tonearmd's cost and responsiveness the same way every time (docs/performance.md).
/// Run it through `make bench`, which builds release, the C floor and the media first.
@main
struct Bench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tonearm-bench", abstract: "Benchmark tonearmd against the libav floor and its budgets.")

    @Option(help: "The tonearmd binary.") var daemon = ".build/release/tonearmd"
    @Option(help: "The C floor binary (bench/floor.c).") var floor = ".build/bench/floor"
    @Option(help: "The control path's C floor (bench/control_floor.c).") var controlFloor = ".build/bench/control_floor"
    @Option(help: "Media made by scripts/make-bench-media.sh.") var media = ".build/bench/media"
    @Option(help: "A library benchmark's tree (scripts/make-bench-library.py); each one given is measured.")
    var libraryTree: [String] = [".build/bench/library-20k", ".build/bench/library-100k"]
    @Option(help: "Repeats for the repeated figures.") var repeats = 5
    @Flag(help: "Print only the JSON lines.") var jsonOnly = false
    @Flag(help: "Shorter windows and fewer repeats (a smoke run, not for the record).") var quick = false
    @Option(
        help:
            "Run one section only: startup, decode, realtime, idle, control, responsiveness, queue, edits, network, snapcast, library, web, loudness, release, crossfade, upnp."
    ) var only: String?

    func run() throws {
        let bench = Runner(
            daemon: daemon, floor: floor, controlFloor: controlFloor, media: media, libraryTrees: libraryTree,
            repeats: quick ? 2 : repeats,
            window: quick ? 1 : 10, report: Report(jsonOnly: jsonOnly))
        for path in [daemon, floor, controlFloor] where !FileManager.default.isExecutableFile(atPath: path) {
            throw ValidationError("\(path) is missing: run `make bench`")
        }
        let started = monotonic()
        let sections: [(String, () throws -> Void)] = [
            ("startup", bench.startup), ("decode", bench.decodeCost), ("realtime", bench.realTime),
            ("idle", bench.idleAndMemory), ("control", bench.control), ("responsiveness", bench.responsiveness),
            ("queue", bench.queue), ("edits", bench.edits), ("network", bench.network), ("snapcast", bench.snapcast),
            ("library", bench.library), ("web", bench.web), ("loudness", bench.loudness), ("release", bench.release),
            ("crossfade", bench.crossfade), ("upnp", bench.upnp),
        ]
        if let only, !sections.contains(where: { $0.0 == only }) { throw ValidationError("no section '\(only)'") }
        for (name, section) in sections where only == nil || only == name { try section() }
        bench.report.print()
        FileHandle.standardError.write(Data(String(format: "benchmark took %.0f s\n", monotonic() - started).utf8))
    }
}

/// A running tonearmd on a socket of its own.
final class RunningDaemon {
    let child: Child
    let directory: TemporaryDirectory
    let socket: String
    let startupSeconds: Double

    init(_ binary: String, _ arguments: [String]) throws {
        directory = try TemporaryDirectory()
        socket = directory.path("s.sock")
        let start = monotonic()
        child = try Child.spawn(
            binary,
            [
                "--socket", socket, "--log-level", "error",
                "--state-directory", directory.path("state"),
            ] + arguments, log: directory.path("log"))
        while (try? LineClient(path: socket)) == nil {
            guard monotonic() - start < 10 else { throw BenchError("tonearmd did not start") }
            usleep(200)
        }
        startupSeconds = monotonic() - start
    }

    func client() throws -> LineClient { try LineClient(path: socket) }
    var sample: ProcessSample { ProcessSample(pid: child.pid) }

    /// SIGTERM and wait; the CPU seconds the whole process used.
    func stop() -> Double {
        defer { directory.remove() }
        return child.terminate()
    }
}

/// Debian's MPD on a Unix socket of its own, with a null output and no database: the peer the
/// control figures are compared with.
final class MPDPeer {
    let child: Child
    let directory: TemporaryDirectory
    let socket: String

    init() throws {
        let binary = "/usr/bin/mpd"
        guard FileManager.default.isExecutableFile(atPath: binary) else { throw BenchError("no \(binary)") }
        directory = try TemporaryDirectory()
        socket = directory.path("mpd.sock")
        let config = directory.path("mpd.conf")
        try """
        bind_to_address "\(socket)"
        log_file "\(directory.path("mpd.log"))"
        audio_output {
            type "null"
            name "null"
        }

        """.write(toFile: config, atomically: true, encoding: .utf8)
        child = try Child.spawn(binary, ["--no-daemon", config], log: directory.path("stdout"))
        let start = monotonic()
        while (try? LineClient(path: socket)) == nil {
            guard monotonic() - start < 10 else { throw BenchError("mpd did not start") }
            usleep(1000)
        }
    }
}

/// The control path's C floor (`bench/control_floor.c`) on a Unix socket of its own.
final class ControlFloor {
    let child: Child
    let directory: TemporaryDirectory
    let socket: String

    init(_ binary: String) throws {
        directory = try TemporaryDirectory()
        socket = directory.path("floor.sock")
        child = try Child.spawn(binary, [socket], log: directory.path("stdout"))
        let start = monotonic()
        while (try? LineClient(path: socket)) == nil {
            guard monotonic() - start < 10 else { throw BenchError("the control floor did not start") }
            usleep(1000)
        }
    }
}

/// Reads a subscribed connection until `predicate` matches an event's params.
func waitForEvent(_ client: LineClient, timeout: Double = 30, _ predicate: ([String: Any]) -> Bool) throws {
    let deadline = monotonic() + timeout
    while monotonic() < deadline {
        let message = try client.readJSON(timeout: deadline - monotonic())
        if let params = message["params"] as? [String: Any], predicate(params) { return }
    }
    throw BenchError("event did not come within \(timeout) s")
}

func isTransition(to state: String) -> ([String: Any]) -> Bool {
    { ($0["to"] as? [String: Any])?["state"] as? String == state }
}

struct Runner {
    let daemon: String
    let floor: String
    let controlFloor: String
    let media: String
    let libraryTrees: [String]
    let repeats: Int
    let window: Double
    let report: Report

    func file(_ seconds: Int, _ format: String) -> String {
        URL(fileURLWithPath: media).appendingPathComponent("bench-\(seconds).\(format)").path
    }

    // 7. Start-up: process start to socket accepting.
    func startup() throws {
        var times: [Double] = []
        for _ in 0..<Swift.max(repeats * 4, 10) {
            let running = try RunningDaemon(daemon, ["--device", "null"])
            times.append(running.startupSeconds * 1000)
            _ = running.stop()
        }
        report.add("startup to accepting", "ms", times, budget: .atMost(50))
    }

    // 1. Decode cost: CPU of the whole daemon playing a file unpaced, against the C floor.
    func decodeCost() throws {
        for format in ["flac", "mp3", "ogg", "opus", "m4a"] {
            var daemonPerMinute: [Double] = []
            var floorPerMinute: [Double] = []
            var ratios: [Double] = []
            var fixed: [Double] = []
            var decoderRatios: [Double] = []
            for _ in 0..<repeats {
                // Ten minutes of audio: a minute's decoding (50-150 ms) is too little against this
                // VM's noise (the same 60 s file's floor moved between 21 and 55 ms over five runs).
                let (long, decoderLong) = try daemonCPU(file(600, format))
                let (short, decoderShort) = try daemonCPU(file(1, format))
                let floorLong = try Child.spawn(floor, [file(600, format)]).wait()
                let floorShort = try Child.spawn(floor, [file(1, format)]).wait()
                // 600 s minus 1 s leaves 599 s of decoding: scale to a minute.
                let daemonMinute = (long - short) * 60 / 599
                let floorMinute = (floorLong - floorShort) * 60 / 599
                daemonPerMinute.append(daemonMinute * 1000)
                floorPerMinute.append(floorMinute * 1000)
                ratios.append(daemonMinute / floorMinute)
                decoderRatios.append((decoderLong - decoderShort) * 60 / 599 / floorMinute)
                fixed.append(short * 1000)
            }
            report.add("decode \(format): daemon CPU per minute", "ms", daemonPerMinute)
            report.add("decode \(format): floor CPU per minute", "ms", floorPerMinute)
            report.add("decode \(format): daemon / floor", "ratio", ratios, budget: .atMost(1.10))
            // The decoder thread alone does what the floor does (demux, decode, convert) and
            // copies into the pipe; the rest of the daemon's figure is the output thread taking
            // each chunk (woken per chunk: unpaced, `null` never makes it wait) and the news.
            report.add("decode \(format): decoder thread / floor", "ratio", decoderRatios)
            report.add("decode \(format): daemon CPU for a 1 s file (load to end)", "ms CPU", fixed)
        }
    }

    /// CPU seconds a started daemon spends from a `load` of `path`, played unpaced, to its end;
    /// and those of its decoder thread alone. The daemon's start and stop (~95 ms of CPU that
    /// moved by ±8 ms between runs, measured by the start-up figures) are left out: with them,
    /// their noise alone moved a ratio by ±0.03.
    private func daemonCPU(_ path: String) throws -> (whole: Double, decoderThread: Double) {
        let running = try RunningDaemon(daemon, ["--device", "null"])
        let watcher = try running.client()
        _ = try watcher.call("subscribe", ["events": ["transition"]])
        let control = try running.client()
        let before = running.sample
        let load = try control.call("load", ["url": path, "play": true])
        guard load["result"] != nil else { throw BenchError("load \(path) failed: \(load)") }
        try waitForEvent(watcher, isTransition(to: "ended"))
        let after = running.sample
        _ = running.stop()
        let decoderThread = ((after.cpuByThreadName["tonearm-decoder"] ?? 0) - (before.cpuByThreadName["tonearm-decoder"] ?? 0)) / 1e9
        return ((after.cpuNanoseconds - before.cpuNanoseconds) / 1e9, decoderThread)
    }

    // 2. Real-time playback: CPU %, threads and wake-ups while playing paced at 1×.
    func realTime() throws {
        for format in ["flac", "mp3"] {
            let running = try RunningDaemon(daemon, ["--device", "null", "--pace"])
            let control = try running.client()
            _ = try control.call("load", ["url": file(60, format), "play": true])
            sleep(seconds: 1)
            var cpu: [Double] = []
            var wakeups: [Double] = []
            var rss: [Double] = []
            var dirty: [Double] = []
            var threads: [Double] = []
            for _ in 0..<3 {
                let (before, start) = (running.sample, monotonic())
                sleep(seconds: window)
                let (after, end) = (running.sample, monotonic())
                cpu.append((after.cpuNanoseconds - before.cpuNanoseconds) / 1e9 / (end - start) * 100)
                wakeups.append(after.contextSwitches(since: before) / (end - start))
                threads.append(Double(after.threads))
                let mem = memory(pid: running.child.pid)
                rss.append(mem.rss)
                dirty.append(mem.privateDirty)
            }
            report.add("playing \(format) 1x: CPU", "% of a core", cpu, budget: .atMost(format == "flac" ? 0.25 : 0.5))
            report.add("playing \(format) 1x: wake-ups", "/s", wakeups, budget: .atMost(30))
            report.add("playing \(format) 1x: threads", "threads", threads)
            report.add("playing \(format) 1x: RSS", "MiB", rss, budget: .atMost(40))
            report.add("playing \(format) 1x: private dirty", "MiB", dirty)
            _ = running.stop()
        }
    }

    // 3 and 4. Idle and paused wake-ups; memory idle and after 200 load/stop cycles.
    func idleAndMemory() throws {
        let running = try RunningDaemon(daemon, ["--device", "null", "--pace"])
        sleep(seconds: 0.5)
        let idleMemory = memory(pid: running.child.pid)
        report.add("idle: RSS", "MiB", [idleMemory.rss])
        report.add("idle: private dirty", "MiB", [idleMemory.privateDirty])
        report.add("idle: wake-ups", "/s", windows(running, count: 3, length: window * 2), budget: .atMost(0))

        var control = try running.client()
        _ = try control.call("load", ["url": file(60, "flac"), "play": true])
        sleep(seconds: 0.3)
        _ = try control.call("pause")
        try waitUntilReleased(control)
        report.add("paused: wake-ups", "/s", windows(running, count: 3, length: window * 2), budget: .atMost(0))
        // A connection silent for `control.connection_timeout` (60 s) is closed: a new one.
        control = try running.client()
        _ = try control.call("stop")

        // Warm up once per format the cycles use, then 200 cycles of load + play + stop. A codec's
        // first use builds its static tables once (the MP3 decoder's are ~1.9 MiB); that is not growth
        // over cycles, and warming up FLAC alone used to count it.
        for format in ["flac", "mp3"] {
            _ = try control.call("load", ["url": file(1, format), "play": true])
            _ = try control.call("stop")
        }
        sleep(seconds: 0.2)
        let before = memory(pid: running.child.pid).rss
        for index in 0..<200 {
            let answer = try control.call("load", ["url": file(index % 2 == 0 ? 1 : 60, index % 3 == 0 ? "mp3" : "flac"), "play": true])
            guard answer["result"] != nil else { throw BenchError("load failed in cycle \(index): \(answer)") }
            _ = try control.call("stop")
        }
        sleep(seconds: 0.5)
        let after = memory(pid: running.child.pid).rss
        report.add("RSS growth over 200 load/stop cycles", "MiB", [after - before], budget: .atMost(1))
        _ = running.stop()
    }

    func windows(_ running: RunningDaemon, count: Int, length: Double) -> [Double] {
        (0..<count).map { _ in
            let (before, start) = (running.sample, monotonic())
            sleep(seconds: length)
            let (after, end) = (running.sample, monotonic())
            return after.contextSwitches(since: before) / (end - start)
        }
    }

    // 6. Responsiveness: load → reply, load+play → first audio, pause → reply, seek → reply.
    // Without the pause's fade: its answer would wait for what the device holds to be heard,
    // and this measures the request path.
    func responsiveness() throws {
        let running = try RunningDaemon(daemon, ["--device", "null", "--pace", "--no-pause-fade"])
        let control = try running.client()
        let watcher = try running.client()
        _ = try watcher.call("subscribe", ["events": ["performance"]])
        var load: [Double] = []
        var firstAudio: [Double] = []
        var pause: [Double] = []
        var seek: [Double] = []
        for index in 0..<Swift.max(repeats * 4, 10) {
            let path = file(60, index % 2 == 0 ? "flac" : "mp3")
            var start = monotonic()
            _ = try control.call("load", ["url": path])
            load.append((monotonic() - start) * 1000)

            start = monotonic()
            _ = try control.call("load", ["url": path, "play": true])
            try waitForEvent(watcher) { $0["event"] as? String == "first_audio" }
            firstAudio.append((monotonic() - start) * 1000)

            sleep(seconds: 0.05)
            start = monotonic()
            _ = try control.call("pause")
            pause.append((monotonic() - start) * 1000)

            start = monotonic()
            _ = try control.call("seek", ["position": 30.0 + Double(index)])
            seek.append((monotonic() - start) * 1000)
        }
        report.add("load → reply", "ms", load)
        report.add("load+play → first audio event", "ms", firstAudio, budget: .atMost(3))
        report.add("pause → reply", "ms", pause, budget: .atMost(0.3))
        report.add("seek → reply", "ms", seek, budget: .atMost(1))
        _ = running.stop()
    }
}

extension Runner {
    // 8. The queue: the gap at a same-format join, `next` → first audio of the next item, and
    // threads and memory over 1,000 add/clear/next cycles.
    func queue() throws {
        // A continuous signal cut in three FLAC files; captured, it must be the uncut signal.
        let capture = try TemporaryDirectory()
        defer { capture.remove() }
        let running = try RunningDaemon(daemon, ["--device", capture.fileDevice("out.raw"), "--pace", "--speed", "20"])
        let control = try running.client()
        let watcher = try running.client()
        _ = try watcher.call("subscribe", ["events": ["transition"]])
        let parts = (1...3).map { Fixtures.path("gapless-\($0).flac") }
        _ = try control.call("add", ["urls": parts, "play": true])
        try waitForEvent(watcher, isTransition(to: "ended"))
        let reference = try Fixtures.wavPCM("tone.wav")
        let received = (try? Data(contentsOf: URL(fileURLWithPath: capture.path("out.raw")))) ?? Data()
        // Frames missing (a gap) or extra (an overlap); a mismatch of the same length counts every frame.
        let gap = received == reference ? 0 : Swift.max(abs(reference.count - received.count) / 4, 1)
        report.add("gap at a same-format join", "samples", [Double(gap)], budget: .atMost(0))
        _ = running.stop()

        // `next` while playing → the next item's first frames reach the device.
        let paced = try RunningDaemon(daemon, ["--device", "null", "--pace"])
        let client = try paced.client()
        var latencies: [Double] = []
        // The subscriber is closed before the cycles below: one that stops reading makes the
        // daemon hold its events (up to the backlog limit, ClientSession), which is not growth.
        do {
            let events = try paced.client()
            _ = try events.call("subscribe", ["events": ["performance"]])
            for index in 0..<Swift.max(repeats * 4, 10) {
                _ = try client.call("clear")
                let format = index % 2 == 0 ? "flac" : "mp3"
                _ = try client.call("add", ["urls": [file(60, format), file(60, format == "flac" ? "mp3" : "flac")], "play": true])
                try waitForEvent(events) { $0["event"] as? String == "first_audio" }
                sleep(seconds: 0.05)
                let start = monotonic()
                _ = try client.call("next")
                try waitForEvent(events) { $0["event"] as? String == "first_audio" }
                latencies.append((monotonic() - start) * 1000)
            }
        }
        report.add("next → first audio of the next item", "ms", latencies, budget: .atMost(5))

        // 1,000 cycles of add, play, next and clear: threads and RSS must stay flat. The first
        // cycles take a step (codec tables, the allocator's arenas of each thread that decodes,
        // opens or answers): measured by hand it settles within ~100 cycles and then holds
        // within a few hundred KiB over 2,000. The step is reported on its own, after 200
        // warm-up cycles, and the budget holds the 1,000 cycles after it.
        sleep(seconds: 0.3)
        let start = memory(pid: paced.child.pid).rss
        for _ in 0..<200 { try queueCycle(client) }
        sleep(seconds: 0.3)
        let before = (paced.sample.threads, memory(pid: paced.child.pid).rss)
        report.add("RSS step over the first 200 add/clear/next cycles", "MiB", [before.1 - start])
        for _ in 0..<1000 { try queueCycle(client) }
        sleep(seconds: 0.5)
        let after = (paced.sample.threads, memory(pid: paced.child.pid).rss)
        report.add("threads over 1,000 add/clear/next cycles", "change", [Double(after.0 - before.0)], budget: .atMost(0))
        report.add("RSS growth over 1,000 add/clear/next cycles", "MiB", [after.1 - before.1], budget: .atMost(1))
        _ = paced.stop()
    }

    private func queueCycle(_ client: LineClient) throws {
        let answer = try client.call("add", ["urls": [file(1, "flac"), file(1, "mp3")], "play": true])
        guard answer["result"] != nil else { throw BenchError("add failed: \(answer)") }
        _ = try client.call("next")
        _ = try client.call("clear")
    }
}

final class Counter: Sendable {
    private let total = Atomic<Int>(0)
    func add(_ count: Int) { total.add(count, ordering: .relaxed) }
    var value: Int { total.load(ordering: .relaxed) }
}

extension Runner {
    /// Paused, the device is released once after `output.release_after_s` (10 s): one wake-up,
    /// then none. A paused daemon's wake-ups are measured from then on.
    func waitUntilReleased(_ control: LineClient) throws {
        let released = monotonic()
        while (try control.call("status")["result"] as? [String: Any]).flatMap({ ($0["output"] as? [String: Any])?["open"] as? Bool })
            != false
        {
            guard monotonic() - released < 30 else { throw BenchError("the paused device was never released") }
            sleep(seconds: 0.1)
        }
        sleep(seconds: 0.3)
    }
}
