import ArgumentParser
import Foundation
import Synchronization
import TonearmRigs

extension Runner {
    /// A `status` request on one protocol, and how its reply is read.
    struct StatusProbe: Sendable {
        let name: String
        let socket: String
        let request: Data
        let roundTrip: @Sendable (LineClient, Data) throws -> Void

        static func json(_ socket: String) -> StatusProbe {
            StatusProbe(
                name: "status", socket: socket, request: Data(#"{"jsonrpc":"2.0","id":1,"method":"status"}"#.utf8 + [0x0A]),
                roundTrip: { try $0.roundTrip($1) })
        }

        static func mpd(_ name: String, _ socket: String) -> StatusProbe {
            StatusProbe(name: name, socket: socket, request: Data("status\n".utf8), roundTrip: { try $0.mpdRoundTrip($1) })
        }

        /// A connected client (an MPD client first reads the greeting).
        func connect() throws -> LineClient {
            let client = try LineClient(path: socket)
            if request.first != UInt8(ascii: "{") { _ = try client.readLine() }
            return client
        }
    }

    // 5. Control: status round trips from one client, and throughput from 10 and 100 clients, over
    // JSON-RPC and MPD's protocol, with Debian's MPD answering the same MPD `status` as a peer,
    // and the C floor (one epoll thread answering every line with a fixed 300-byte reply).
    func control() throws {
        let running = try RunningDaemon(daemon, ["--device", "null"])
        var ours: [StatusFigures] = []
        for probe in [StatusProbe.json(running.socket), .mpd("mpd status", running.directory.path("mpd.sock"))] {
            ours.append(try measureStatus(probe, pid: running.child.pid, throughput: true))
        }
        _ = running.stop()
        let floorServer = try ControlFloor(controlFloor)
        let floorFigures = try measureStatus(
            .mpd("floor: C server status", floorServer.socket), pid: floorServer.child.pid,
            throughput: true, budgets: false)
        _ = floorServer.child.terminate()
        floorServer.directory.remove()
        for (figures, side) in zip(ours, ["JSON-RPC", "MPD"]) {
            report.add(
                "status \(side): daemon CPU per request / the C floor's", "ratio",
                [figures.cpuPerRequest / floorFigures.cpuPerRequest], budget: .atMost(2.0))
        }
        guard let peer = try? MPDPeer() else {
            FileHandle.standardError.write(Data("no mpd binary: the MPD peer figures are left out (apt-get install mpd)\n".utf8))
            return
        }
        let mpd = try measureStatus(.mpd("peer: Debian's MPD status", peer.socket), pid: peer.child.pid, throughput: true, budgets: false)
        _ = peer.child.terminate()
        peer.directory.remove()
        for (figures, side) in zip(ours, ["JSON-RPC", "MPD"]) {
            report.add(
                "status \(side): req/s with 100 clients / MPD's", "ratio",
                [figures.ratePer100Clients / mpd.ratePer100Clients], budget: .atLeast(1.5))
            report.add("status \(side): p99 round trip / MPD's", "ratio", [figures.p99 / mpd.p99], budget: .atMost(0.75))
        }
    }

    /// What `measureStatus` found: one client's CPU per request and p99, and the median rate with 100 clients.
    struct StatusFigures {
        var cpuPerRequest: Double
        var p99: Double
        var ratePer100Clients = Double.nan
    }

    @discardableResult
    func measureStatus(_ probe: StatusProbe, pid: pid_t, throughput withClients: Bool, budgets: Bool = true) throws -> StatusFigures {
        let client = try probe.connect()
        for _ in 0..<200 { try probe.roundTrip(client, probe.request) }  // warm up
        var latencies: [Double] = []
        latencies.reserveCapacity(2000)
        let cpuBefore = ProcessSample(pid: pid).cpuNanoseconds
        for _ in 0..<2000 {
            let start = monotonic()
            try probe.roundTrip(client, probe.request)
            latencies.append((monotonic() - start) * 1e6)
        }
        let cpuPerRequest = (ProcessSample(pid: pid).cpuNanoseconds - cpuBefore) / 1e3 / 2000
        report.add("\(probe.name) round trip p50", "µs", [percentile(latencies, 0.5)])
        report.add("\(probe.name) round trip p99", "µs", [percentile(latencies, 0.99)], budget: budgets ? .atMost(150) : nil)
        report.add("\(probe.name) round trip max", "µs", [latencies.max() ?? .nan])
        report.add("\(probe.name): daemon CPU per request (1 client)", "µs", [cpuPerRequest], budget: budgets ? .atMost(20) : nil)
        var figures = StatusFigures(cpuPerRequest: cpuPerRequest, p99: percentile(latencies, 0.99))
        guard withClients else { return figures }
        for clients in [10, 100] {
            var rates: [Double] = []
            var costs: [Double] = []
            for _ in 0..<Swift.max(repeats / 2, 2) {
                let (rate, cost) = try throughput(probe, pid: pid, clients: clients, seconds: Swift.max(window / 3, 1))
                rates.append(rate)
                costs.append(cost)
            }
            report.add(
                "\(probe.name) with \(clients) clients", "req/s", rates,
                budget: budgets && clients == 100 ? .atLeast(60_000) : nil)
            report.add("\(probe.name) with \(clients) clients: daemon CPU per request", "µs", costs, budget: budgets ? .atMost(12) : nil)
            if clients == 100 { figures.ratePer100Clients = percentile(rates, 0.5) }
        }
        return figures
    }

    /// Each client on its own thread with its own connection, blocking round trips for `seconds`.
    func throughput(_ probe: StatusProbe, pid: pid_t, clients: Int, seconds: Double) throws -> (Double, Double) {
        let total = Counter()
        let connected = DispatchGroup()
        let finished = DispatchGroup()
        let go = DispatchSemaphore(value: 0)
        let request = probe.request
        for _ in 0..<clients {
            connected.enter()
            finished.enter()
            let thread = Thread {
                let connection = try? probe.connect()
                connected.leave()
                go.wait()
                let deadline = monotonic() + seconds
                var count = 0
                while let connection, monotonic() < deadline, (try? probe.roundTrip(connection, request)) != nil { count += 1 }
                total.add(count)
                finished.leave()
            }
            thread.stackSize = 256 * 1024
            thread.start()
        }
        connected.wait()
        let cpuBefore = ProcessSample(pid: pid).cpuNanoseconds
        let start = monotonic()
        for _ in 0..<clients { go.signal() }
        finished.wait()
        let elapsed = monotonic() - start
        let cpu = (ProcessSample(pid: pid).cpuNanoseconds - cpuBefore) / 1e3
        return (Double(total.value) / elapsed, cpu / Double(Swift.max(total.value, 1)))
    }
}
