import Foundation
import TonearmRigs

#if canImport(Glibc)
    import Glibc
#endif

extension Runner {
    /// The UPnP renderer's budgets (#42): a SOAP round trip (a connection each, as control points
    /// make them), beside Debian's gmediarender where it is installed; and what an idle renderer
    /// with an event subscriber costs (no wake-up but SSDP's alive every 900 s).
    func upnp() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let port = try freeTCPPort()
        let config = directory.path("tonearmd.toml")
        try "[upnp]\nenabled = true\ninterfaces = [\"lo\"]\nport = \(port)\nssdp_port = \(try freeUDPPort())\n"
            .write(toFile: config, atomically: true, encoding: .utf8)
        let running = try RunningDaemon(daemon, ["--device", "null", "--pace", "--config", config])
        defer { _ = running.stop() }

        let ours = try soapRoundTrips(host: "127.0.0.1", port: port, control: "/upnp/control/AVTransport", count: 300)
        report.add("upnp: SOAP GetTransportInfo round trip p50", "ms", [percentile(ours, 0.5)])
        report.add("upnp: SOAP GetTransportInfo round trip p99", "ms", [percentile(ours, 0.99)], budget: .atMost(5))
        if let peer = try gmediarenderRoundTrips(directory) {
            report.add("upnp: gmediarender's SOAP round trip p50 (beside)", "ms", [percentile(peer, 0.5)])
            report.add("upnp: SOAP round trip p50 / gmediarender's", "ratio", [percentile(ours, 0.5) / percentile(peer, 0.5)])
        }

        let sink = try NotifySink()
        defer { sink.stop() }
        guard
            let subscribed = try WebClient(port: port).request(
                "SUBSCRIBE", "/upnp/event/AVTransport",
                headers: ["CALLBACK": "<http://127.0.0.1:\(sink.port)/>", "NT": "upnp:event", "TIMEOUT": "Second-1800"]),
            subscribed.status == 200
        else { throw BenchError("SUBSCRIBE failed") }
        let deadline = monotonic() + 5
        while sink.count == 0, monotonic() < deadline { usleep(10_000) }
        guard sink.count > 0 else { throw BenchError("no initial NOTIFY") }
        sleep(seconds: 1)
        let (before, start) = (running.sample, monotonic())
        let wakeUps = windows(running, count: 2, length: window)
        let (after, end) = (running.sample, monotonic())
        report.add("upnp: idle renderer with a subscriber: wake-ups", "/s", wakeUps, budget: .atMost(0))
        report.add(
            "upnp: idle renderer with a subscriber: CPU", "% of a core",
            // Summed over threads sampled one after another: an idle process can read a hair below 0.
            [Swift.max(0, (after.cpuNanoseconds - before.cpuNanoseconds) / 1e9 / (end - start) * 100)], budget: .atMost(0.05))
    }

    /// `count` GetTransportInfo calls, each on a connection of its own: milliseconds each.
    private func soapRoundTrips(host: String, port: Int, control: String, count: Int) throws -> [Double] {
        let envelope = Array(
            (#"<?xml version="1.0"?><s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/" "#
                + #"s:encodingStyle="http://schemas.xmlsoap.org/soap/encoding/"><s:Body>"#
                + #"<u:GetTransportInfo xmlns:u="urn:schemas-upnp-org:service:AVTransport:1"><InstanceID>0</InstanceID>"#
                + "</u:GetTransportInfo></s:Body></s:Envelope>").utf8)
        var latencies: [Double] = []
        for _ in 0..<count {
            let start = monotonic()
            let answer = try WebClient(host: host, port: port).request(
                "POST", control,
                headers: [
                    "Host": "\(host):\(port)", "SOAPACTION": "\"urn:schemas-upnp-org:service:AVTransport:1#GetTransportInfo\"",
                    "Content-Type": "text/xml; charset=\"utf-8\"",
                ], body: envelope)
            guard answer?.status == 200 else { throw BenchError("GetTransportInfo answered \(answer?.status ?? 0) at \(host)") }
            latencies.append((monotonic() - start) * 1000)
        }
        return latencies
    }

    /// Debian's gmediarender on this machine's real interface (libupnp refuses loopback), when
    /// installed: its SOAP round trips, measured the same way.
    private func gmediarenderRoundTrips(_ directory: TemporaryDirectory) throws -> [Double]? {
        let binary = "/usr/bin/gmediarender"
        guard FileManager.default.isExecutableFile(atPath: binary), let interface = realInterface() else { return nil }
        // gmediarender takes a port in the dynamic range only (49152–65535); the kernel's free
        // ports start lower.
        let port = try freePort(in: 49152...65535)
        let child = try Child.spawn(
            binary,
            [
                "--gstout-audiosink=fakesink sync=true", "-I", interface.name, "-p", "\(port)", "-u",
                "6d1b0a3c-0000-4000-8000-00000000be0c", "-f", "bench",
            ], log: directory.path("gmediarender.log"))
        defer { _ = child.terminate() }
        let deadline = monotonic() + 10
        var description: WebClient.Response?
        while monotonic() < deadline {
            description = try? WebClient(host: interface.address, port: port).request(
                "GET", "/description.xml", headers: ["Host": "\(interface.address):\(port)"])
            if description?.status == 200 { break }
            usleep(50_000)
        }
        // Its AVTransport control URL, from its description.
        guard let text = description?.text, let service = text.range(of: "urn:schemas-upnp-org:service:AVTransport:1"),
            let open = text[service.upperBound...].range(of: "<controlURL>"),
            let close = text[open.upperBound...].range(of: "</controlURL>")
        else { throw BenchError("gmediarender did not describe itself: \(description?.status ?? 0)") }
        let control = String(text[open.upperBound..<close.lowerBound])
        return try soapRoundTrips(
            host: interface.address, port: port, control: control.hasPrefix("/") ? control : "/" + control, count: 300)
    }
}

/// A TCP port in `range` nothing listens on now.
private func freePort(in range: ClosedRange<Int>) throws -> Int {
    for _ in 0..<200 {
        let candidate = Int.random(in: range)
        if let (fd, port) = try? listenOnLoopback(port: candidate) {
            close(fd)
            return port
        }
    }
    throw BenchError("no free port in \(range)")
}

/// An event subscriber's callback: answers every NOTIFY with 200, and counts them.
/// Unchecked: `port` and `listener` are set once in `init`; the count is read and written only
/// under `lock` (its accepting thread writes, the bench reads).
final class NotifySink: @unchecked Sendable {
    let port: Int
    private let listener: Int32
    private let lock = NSLock()
    private var received = 0

    init() throws {
        (listener, port) = try listenOnLoopback()
        Thread { [self] in serve() }.start()
    }

    var count: Int { lock.withLock { received } }

    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    private func serve() {
        while true {
            let fd = accept(listener, nil, nil)
            guard fd >= 0 else { return }
            var request: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 8192)
            // The head, then the body by its length.
            while true {
                let n = read(fd, &chunk, chunk.count)
                guard n > 0 else { break }
                request += chunk[0..<n]
                if let end = request.firstRange(of: [13, 10, 13, 10]) {
                    let head = String(decoding: request[..<end.lowerBound], as: UTF8.self).lowercased()
                    let length =
                        head.split(separator: "\r\n").first { $0.hasPrefix("content-length:") }
                        .flatMap { Int($0.dropFirst(15).trimmingCharacters(in: .whitespaces)) } ?? 0
                    if request.count - end.upperBound >= length { break }
                }
            }
            let answer = Array("HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8)
            _ = write(fd, answer, answer.count)
            close(fd)
            lock.withLock { received += 1 }
        }
    }
}
