import Foundation
import TonearmRigs

#if canImport(Glibc)
    import Glibc
#endif

extension Runner {
    // 9. A 10,000-item queue over MPD's protocol, tonearmd beside Debian's MPD: what `status`,
    // `playlistinfo` and `plchanges 0` cost with it, and each edit's reply latency and CPU
    // (tonearmd's reply waits for the state journal's fdatasync; MPD keeps its queue in memory
    // and saves it later).
    func edits() throws {
        var peerCPU: [String: Double] = [:]
        if let peer = try? MPDPeer() {
            peerCPU = try measureEdits("peer: Debian's MPD", socket: peer.socket, pid: peer.child.pid, peerCPU: nil)
            _ = peer.child.terminate()
            peer.directory.remove()
        } else {
            FileHandle.standardError.write(Data("no mpd binary: the MPD peer figures are left out (apt-get install mpd)\n".utf8))
        }
        let running = try RunningDaemon(daemon, ["--device", "null"])
        _ = try measureEdits("tonearmd", socket: running.directory.path("mpd.sock"), pid: running.child.pid, peerCPU: peerCPU)
        _ = running.stop()
    }

    /// Fills the queue to 10,000 items, then times 300 of each edit; returns the CPU per edit
    /// by kind. With `peerCPU`, the budget is at most twice the peer's CPU for the same edit.
    private func measureEdits(_ name: String, socket: String, pid: pid_t, peerCPU: [String: Double]?) throws -> [String: Double] {
        var listed: [String: Double] = [:]
        let client = try LineClient(path: socket)
        _ = try client.readLine()
        // Tagged as a tagger leaves a song: fifteen tags, every one shown in the listings.
        let path = URL(fileURLWithPath: media).appendingPathComponent("bench-tagged.flac").path
        let emptyStatus = try cpuPerRequest(client, "status\n", pid: pid, count: 5_000)
        for _ in 0..<10 {
            let list = "command_list_begin\n" + String(repeating: "add \"\(path)\"\n", count: 1_000) + "command_list_end\n"
            try client.mpdRoundTrip(Data(list.utf8))
        }
        // The tags of the items added are read in the background: measured once that is done.
        waitUntilQuiet(pid: pid)
        // What a long queue costs the requests that read it.
        let longStatus = try cpuPerRequest(client, "status\n", pid: pid, count: 5_000)
        report.add(
            "\(name): status with 10,000 items / with none: daemon CPU per request", "ratio", [longStatus / emptyStatus],
            budget: peerCPU == nil ? nil : .atMost(1.2))
        for listing in ["playlistinfo", "plchanges 0"] {
            let cpu = try cpuPerRequest(client, listing + "\n", pid: pid, count: 10)
            report.add(
                "\(name): \(listing) of 10,000 items: daemon CPU per request", "ms", [cpu * 1000],
                budget: peerCPU?[listing].map { Budget.atMost($0) })
            listed[listing] = cpu * 1000
        }
        let count = 300
        let edits: [(kind: String, request: Data)] = [
            ("add", Data("add \"\(path)\"\n".utf8)),  // appends: 10,000 → 10,300 items
            ("move", Data("move 5000 0\n".utf8)),  // the middle item to the front
            ("delete", Data("delete 0\n".utf8)),  // the first item: back to 10,000
        ]
        var cpuPerEdit: [String: Double] = [:]
        for (listing, cpu) in listed { cpuPerEdit[listing] = cpu }
        for (kind, request) in edits {
            var latencies: [Double] = []
            latencies.reserveCapacity(count)
            let before = ProcessSample(pid: pid)
            for _ in 0..<count {
                let start = monotonic()
                try client.mpdRoundTrip(request)
                latencies.append((monotonic() - start) * 1000)
            }
            let after = ProcessSample(pid: pid)
            func perEdit(_ nanoseconds: Double) -> Double { nanoseconds / 1e6 / Double(count) }
            let cpu = perEdit(after.cpuNanoseconds - before.cpuNanoseconds)
            cpuPerEdit[kind] = cpu
            report.add("\(name): \(kind) in a 10,000-item queue → reply p50", "ms", [percentile(latencies, 0.5)])
            report.add("\(name): \(kind) in a 10,000-item queue → reply p99", "ms", [percentile(latencies, 0.99)])
            report.add("\(name): \(kind) in a 10,000-item queue: daemon CPU per edit", "ms", [cpu])
            if let peerCPU {
                // tonearmd makes the edit on its event loop and the state journal durable on
                // tonearm-state (encode, write, fdatasync): the edit itself is compared with MPD,
                // which keeps its queue in memory only, and the durability is shown beside it.
                func thread(_ name: String) -> Double {
                    perEdit((after.cpuByThreadName[name] ?? 0) - (before.cpuByThreadName[name] ?? 0))
                }
                let loop = after.cpuByThreadName.keys.filter { $0.hasPrefix("NIO-ELT") }.reduce(0) { $0 + thread($1) }
                report.add(
                    "\(name): \(kind) in a 10,000-item queue: the edit (event loop CPU)", "ms", [loop],
                    budget: peerCPU[kind].map { Budget.atMost(2 * $0) })
                report.add(
                    "\(name): \(kind) in a 10,000-item queue: its durability (tonearm-state CPU)", "ms",
                    [thread("tonearm-state")])
            }
        }
        return cpuPerEdit
    }

    /// Returns once the process uses under 1 % of a core over 200 ms (at most 60 s).
    func waitUntilQuiet(pid: pid_t) {
        let deadline = monotonic() + 60
        while monotonic() < deadline {
            let before = ProcessSample(pid: pid).cpuNanoseconds
            sleep(seconds: 0.2)
            if ProcessSample(pid: pid).cpuNanoseconds - before < 2e6 { return }
        }
    }

    /// The daemon's CPU seconds per request, over `count` round trips of `request` (an MPD command).
    private func cpuPerRequest(_ client: LineClient, _ request: String, pid: pid_t, count: Int) throws -> Double {
        let data = Data(request.utf8)
        try client.mpdRoundTrip(data)
        let before = ProcessSample(pid: pid).cpuNanoseconds
        for _ in 0..<count { try client.mpdRoundTrip(data) }
        return (ProcessSample(pid: pid).cpuNanoseconds - before) / 1e9 / Double(count)
    }
}
