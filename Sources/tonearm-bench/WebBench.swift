import Foundation
import TonearmRigs

#if canImport(Glibc)
    import Glibc
#endif

extension Runner {
    /// The web remote's budgets (#27): the page's size and its first paint in Debian's headless
    /// Chromium; the CPU twenty open pages cost while the daemon plays (each subscribed as the
    /// page subscribes); and the wake-ups of a paused daemon with them open.
    func web() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let port = try freeTCPPort()
        let config = directory.path("tonearmd.toml")
        try "[http]\nbind = \"127.0.0.1:\(port)\"\n".write(toFile: config, atomically: true, encoding: .utf8)
        let running = try RunningDaemon(daemon, ["--device", "null", "--pace", "--config", config])
        defer { _ = running.stop() }

        var bytes = 0
        for path in ["/", "/app.js", "/style.css", "/icon.svg"] {
            guard let response = try WebClient(port: port).request("GET", path), response.status == 200 else {
                throw BenchError("GET \(path) failed")
            }
            bytes += response.body.count
        }
        report.add("web: the page's files, uncompressed", "KB", [Double(bytes) / 1000], budget: .atMost(150))

        let script = Fixtures.directory.deletingLastPathComponent().appendingPathComponent("Scripts/web_remote_browser.py").path
        let painted = try runTool(
            "/usr/bin/timeout",
            [
                "-k", "5", "90", "/usr/bin/python3", script, "paint", "http://127.0.0.1:\(port)/",
                String(Swift.max(repeats, 3)),
            ], timeout: 100)
        let paints = painted.output.split(separator: "\n").compactMap { $0.hasPrefix("paint ") ? Double($0.dropFirst(6)) : nil }
        guard painted.status == 0, !paints.isEmpty else { throw BenchError("the paint measure failed: \(painted.output)") }
        report.add("web: first contentful paint, headless Chromium", "ms", paints, budget: .atMost(300))

        let control = try running.client()
        guard try control.call("load", ["url": file(60, "flac"), "play": true])["result"] != nil else { throw BenchError("load failed") }
        sleep(seconds: 1)
        let alone = cpuPercent(running, over: window)
        var pages: [WebClient] = []
        for _ in 0..<20 {
            let page = try WebClient(port: port)
            guard try page.upgrade()?.status == 101 else { throw BenchError("no WebSocket") }
            _ = page.sendText(
                #"{"jsonrpc":"2.0","id":1,"method":"subscribe","params":{"events":["transition","queue","item","performance","library"]}}"#)
            guard try page.message()?["result"] != nil else { throw BenchError("subscribe failed") }
            pages.append(page)
        }
        sleep(seconds: 1)
        let withPages = cpuPercent(running, over: window)
        report.add("web: CPU of 20 open pages while playing", "% of a core", [withPages - alone], budget: .atMost(0.5))

        _ = try control.call("pause")
        try waitUntilReleased(control)
        report.add("web: paused with 20 open pages: wake-ups", "/s", windows(running, count: 2, length: window), budget: .atMost(0))
        withExtendedLifetime(pages) {}
    }

    private func cpuPercent(_ running: RunningDaemon, over seconds: Double) -> Double {
        let (before, start) = (running.sample, monotonic())
        sleep(seconds: seconds)
        let (after, end) = (running.sample, monotonic())
        return (after.cpuNanoseconds - before.cpuNanoseconds) / 1e9 / (end - start) * 100
    }
}
