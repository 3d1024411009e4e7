import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Debian's real `snapserver` (0.26) with a TCP stream source in server mode on a port of its
/// own, and `snapclient`s with the file player: each client's file grows in real time with what
/// that room would hear (silence while the stream is idle). Every process is stopped by PID.
package final class SnapcastRig {
    package let directory: TemporaryDirectory
    /// Tonearm connects here (`snapcast.source`).
    package let sourcePort: Int
    package let streamPort: Int
    /// snapserver's JSON-RPC over TCP.
    package let controlPort: Int
    /// The tests' format, and snapserver's default.
    package static let format = "48000:16:2"
    /// The source's `sampleformat`.
    package let sampleFormat: String
    private var server: Process?
    private var clients: [Process] = []
    private let extraSourceQuery: String
    /// Added to snapserver's environment (and so its control script's) at each start.
    package var serverEnvironment: [String: String] = [:]

    /// `sourceQuery` is added to the source URI (e.g. a `controlscript`); with `start` false the
    /// server is started by `startServer` (once what its control script needs is up).
    package init(sourceQuery: String = "", format: String = SnapcastRig.format, start: Bool = true) throws {
        sampleFormat = format
        directory = try TemporaryDirectory()
        sourcePort = try freeTCPPort()
        streamPort = try freeTCPPort()
        controlPort = try freeTCPPort()
        extraSourceQuery = sourceQuery
        try FileManager.default.createDirectory(atPath: directory.path("data"), withIntermediateDirectories: true)
        if start { try startServer() }
    }

    /// snapserver's own MPD plug-in, unchanged, as the source's control script (through
    /// Tests/Scripts/snapcast_meta_mpd.py, which only keeps its cover-art lookups on loopback).
    package static var metaMPDQuery: String {
        let script = Fixtures.directory.deletingLastPathComponent().appendingPathComponent("Scripts/snapcast_meta_mpd.py").path
        return "&controlscript=" + (script.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? script)
    }

    deinit { stop() }

    package var configPath: String { directory.path("snapserver.conf") }
    package var log: String { (try? String(contentsOfFile: directory.path("snapserver.log"), encoding: .utf8)) ?? "" }

    /// Starts snapserver (again, after `killServer`), and waits until its control port accepts.
    package func startServer() throws {
        try """
        [server]
        datadir = \(directory.path("data"))
        [http]
        enabled = false
        [tcp]
        enabled = true
        bind_to_address = 127.0.0.1
        port = \(controlPort)
        [stream]
        bind_to_address = 127.0.0.1
        port = \(streamPort)
        source = tcp://127.0.0.1:\(sourcePort)?name=Tonearm&mode=server\(extraSourceQuery)
        sampleformat = \(sampleFormat)
        codec = pcm
        buffer = 1000
        [logging]
        sink = file:\(directory.path("snapserver.log"))

        """.write(toFile: configPath, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/snapserver")
        process.arguments = ["-c", configPath]
        process.environment = ProcessInfo.processInfo.environment.merging(serverEnvironment) { $1 }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        server = process
        let deadline = Date().addingTimeInterval(10)
        while !Self.accepts(port: controlPort) {
            guard Date() < deadline, process.isRunning else { throw LineClient.Failure(description: "snapserver did not start: \(log)") }
            usleep(50_000)
        }
    }

    /// SIGKILL: the server vanishes as in a crash or power loss (any control script with it:
    /// orphaned, it would spin on its closed input).
    package func killServer() {
        guard let server, server.isRunning else { return }
        Self.killWithChildren(server.processIdentifier)
        server.waitUntilExit()
        self.server = nil
    }

    /// SIGKILL to `pid` and every process whose parent it is, children first.
    static func killWithChildren(_ pid: pid_t) {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        for entry in entries {
            guard let child = pid_t(entry), let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { continue }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            if fields.count > 1, pid_t(fields[1]) == pid { killWithChildren(child) }
        }
        kill(pid, SIGKILL)
    }

    /// Starts a client whose file player writes to `name` in the rig's directory; returns the path.
    @discardableResult
    package func startClient(_ name: String) throws -> String {
        let path = directory.path(name)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/snapclient")
        process.arguments = [
            "-h", "127.0.0.1", "-p", String(streamPort), "--hostID", name,
            "--player", "file:filename=\(path)", "--logsink", "null",
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        clients.append(process)
        let deadline = Date().addingTimeInterval(10)
        while readWholeFile(path).isEmpty {
            guard Date() < deadline else { throw LineClient.Failure(description: "snapclient \(name) wrote nothing") }
            usleep(50_000)
        }
        return path
    }

    /// A JSON-RPC request to snapserver (newline-delimited over TCP); its `result`.
    package func call(_ method: String, _ params: [String: Any] = [:]) throws -> [String: Any] {
        guard let fd = connectLoopback(port: controlPort) else { throw LineClient.Failure(description: "snapserver control port refused") }
        defer { close(fd) }
        let request = try JSONSerialization.data(withJSONObject: ["id": 1, "jsonrpc": "2.0", "method": method, "params": params])
        _ = (request + Data([0x0A])).withUnsafeBytes { send(fd, $0.baseAddress!, $0.count, Int32(MSG_NOSIGNAL)) }
        var answer = Data()
        var buffer = [UInt8](repeating: 0, count: 65536)
        // Notifications may come first; the answer is the line with our id.
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            let count = recv(fd, &buffer, buffer.count, 0)
            guard count > 0 else { throw LineClient.Failure(description: "no answer to \(method)") }
            answer += buffer[0..<count]
            while let newline = answer.firstIndex(of: 0x0A) {
                let line = answer[answer.startIndex..<newline]
                answer = Data(answer[(newline + 1)...])
                if let object = try? JSONSerialization.jsonObject(with: line) as? [String: Any], object["id"] as? Int == 1 {
                    if let error = object["error"] { throw LineClient.Failure(description: "\(method): \(error)") }
                    return object["result"] as? [String: Any] ?? [:]
                }
            }
        }
        throw LineClient.Failure(description: "no answer to \(method) within 10 s")
    }

    /// Every process started, by PID: SIGKILL, and wait.
    package func stop() {
        for process in clients + [server].compactMap({ $0 }) where process.isRunning {
            Self.killWithChildren(process.processIdentifier)
            process.waitUntilExit()
        }
        clients = []
        server = nil
    }

    static func accepts(port: Int) -> Bool {
        guard let fd = connectLoopback(port: port) else { return false }
        close(fd)
        return true
    }
}

/// Interleaved 16-bit stereo PCM as frames of (left, right).
package func stereoFrames(_ bytes: [UInt8]) -> [(Int16, Int16)] {
    func sample(_ index: Int) -> Int16 {
        let low = UInt16(bytes[index])
        let high = UInt16(bytes[index + 1]) << 8
        return Int16(bitPattern: low | high)
    }
    var frames: [(Int16, Int16)] = []
    frames.reserveCapacity(bytes.count / 4)
    var index = 0
    while index + 4 <= bytes.count {
        frames.append((sample(index), sample(index + 2)))
        index += 4
    }
    return frames
}
