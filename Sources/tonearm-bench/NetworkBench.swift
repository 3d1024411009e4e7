import Foundation
import TonearmRigs

#if canImport(Glibc)
    import Glibc
#endif

extension Runner {
    // 9. Network streams: a live MP3 stream (the 60 s file sent at its bit rate, in a loop, by the
    // tests' HTTP server) against the same file played locally; wake-ups while the stream starves
    // (a stalled connection: buffering) and while it is lost (refused: reconnecting); and how
    // fast `stop` answers while a connection is stalled.
    func network() throws {
        let path = file(60, "mp3")
        let size = (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        let server = try TestHTTPServer()
        defer { server.stop() }
        server.route("/radio.mp3", .live(path: path, contentType: "audio/mpeg", bytesPerSecond: size / 60))
        let proxy = try FaultProxy(upstream: server.port)
        defer { proxy.stop() }
        let radio = "http://127.0.0.1:\(proxy.port)/radio.mp3"

        var ratios: [Double] = []
        var local: [Double] = []
        var live: [Double] = []
        for _ in 0..<Swift.max(repeats / 2, 2) {
            let file = try playingCPU(path)
            let stream = try playingCPU(radio)
            local.append(file * 100)
            live.append(stream * 100)
            ratios.append(stream / file)
        }
        report.add("live mp3 stream 1x: CPU", "% of a core", live)
        report.add("the same mp3 file 1x: CPU", "% of a core", local)
        report.add("live mp3 stream / local file CPU", "ratio", ratios, budget: .atMost(1.5))

        let running = try RunningDaemon(daemon, ["--device", "null", "--pace"])
        let control = try running.client()
        guard try control.call("load", ["url": radio, "play": true], timeout: 15)["result"] != nil else {
            throw BenchError("the live stream did not load")
        }
        sleep(seconds: 2)
        proxy.set(.stall)
        try waitForState(control, "buffering", timeout: 15)
        report.add(
            "buffering (stalled connection): wake-ups", "/s", windows(running, count: 3, length: Swift.max(window / 3, 1)),
            budget: .atMost(20))
        proxy.set(.pass)
        proxy.refuse(true)
        proxy.cut()
        sleep(seconds: 1)
        report.add(
            "reconnecting (refused): wake-ups", "/s", windows(running, count: 3, length: Swift.max(window / 3, 1)),
            budget: .atMost(20))
        proxy.refuse(false)
        _ = try control.call("stop")

        server.stallNext("/radio.mp3", after: 100)
        var stops: [Double] = []
        for _ in 0..<Swift.max(repeats, 3) {
            server.stallNext("/radio.mp3", after: 100)
            let loader = try running.client()
            try loader.send(line: #"{"jsonrpc":"2.0","id":1,"method":"load","params":{"url":"\#(radio)","play":true}}"#)
            sleep(seconds: 0.3)
            let start = monotonic()
            _ = try control.call("stop")
            stops.append((monotonic() - start) * 1000)
            _ = try loader.readJSON(timeout: 5)
        }
        report.add("stop during a stalled connection", "ms", stops, budget: .atMost(100))
        _ = running.stop()
    }

    /// CPU share of a core of a daemon playing `url` paced at 1× (on ALSA's `null` device unless
    /// `arguments` say otherwise), over one window after a second.
    func playingCPU(_ url: String, _ arguments: [String] = ["--device", "null", "--pace"]) throws -> Double {
        let running = try RunningDaemon(daemon, arguments)
        defer { _ = running.stop() }
        let control = try running.client()
        guard try control.call("load", ["url": url, "play": true], timeout: 15)["result"] != nil else {
            throw BenchError("\(url) did not load")
        }
        sleep(seconds: 1)
        let (before, start) = (running.sample, monotonic())
        sleep(seconds: window)
        let (after, end) = (running.sample, monotonic())
        return (after.cpuNanoseconds - before.cpuNanoseconds) / 1e9 / (end - start)
    }

    private func waitForState(_ client: LineClient, _ state: String, timeout: Double) throws {
        let deadline = monotonic() + timeout
        while monotonic() < deadline {
            let status = try client.call("status")
            if ((status["result"] as? [String: Any])?["state"] as? [String: Any])?["state"] as? String == state { return }
            usleep(50_000)
        }
        throw BenchError("the daemon never became \(state)")
    }
}
