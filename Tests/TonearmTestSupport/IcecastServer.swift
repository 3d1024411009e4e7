import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Debian's real `icecast2`, run by a test on loopback with a config of its own (it refuses to
/// run as root, so the config makes it change to nobody), fed by `ffmpeg -re` sources. Every
/// process it starts is stopped by PID in `stop()`.
package final class IcecastServer {
    package static let binary = "/usr/bin/icecast2"
    package static let password = "tonearm-test"
    package let port: Int
    private let dir: TemporaryDirectory
    private let server: Process
    private var sources: [Process] = []

    package init() throws {
        dir = try TemporaryDirectory()
        port = try freeTCPPort()
        // The server drops root for nobody: its log directory must be writable by nobody.
        let logs = dir.path("log")
        try FileManager.default.createDirectory(atPath: logs, withIntermediateDirectories: true)
        chmod(logs, 0o777)
        chmod(dir.url.path, 0o755)
        let config = """
            <icecast>
              <limits><clients>20</clients><sources>4</sources><burst-on-connect>1</burst-on-connect>
                <source-timeout>10</source-timeout></limits>
              <authentication><source-password>\(Self.password)</source-password>
                <admin-user>admin</admin-user><admin-password>\(Self.password)</admin-password></authentication>
              <hostname>127.0.0.1</hostname>
              <listen-socket><port>\(port)</port><bind-address>127.0.0.1</bind-address></listen-socket>
              <paths><basedir>/usr/share/icecast2</basedir><logdir>\(logs)</logdir>
                <webroot>/usr/share/icecast2/web</webroot><adminroot>/usr/share/icecast2/admin</adminroot></paths>
              <logging><errorlog>error.log</errorlog><accesslog>access.log</accesslog><loglevel>2</loglevel></logging>
              <security><chroot>0</chroot><changeowner><user>nobody</user><group>nogroup</group></changeowner></security>
            </icecast>
            """
        let path = dir.path("icecast.xml")
        try config.write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o644)
        server = Process()
        server.executableURL = URL(fileURLWithPath: Self.binary)
        server.arguments = ["-c", path]
        server.standardOutput = FileHandle.nullDevice
        server.standardError = FileHandle.nullDevice
        try server.run()
        guard TCPWait.tcpAccepts(port: port, timeout: 10) else {
            stop()
            throw LineClient.Failure(description: "icecast2 did not listen on \(port): \(log)")
        }
    }

    deinit { stop() }

    package var log: String { (try? String(contentsOfFile: dir.path("log/error.log"), encoding: .utf8)) ?? "" }

    package func url(_ mount: String) -> String { "http://127.0.0.1:\(port)\(mount)" }

    /// Streams `file` to `mount` in a loop at real time, as it is (`-c copy`), and waits until the
    /// mount answers listeners.
    package func startSource(_ file: String, mount: String, format: String, contentType: String) throws {
        let source = Process()
        source.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
        source.arguments = [
            "-nostdin", "-hide_banner", "-loglevel", "error", "-re", "-stream_loop", "-1", "-i", file,
            "-c", "copy", "-content_type", contentType, "-f", format,
            "icecast://source:\(Self.password)@127.0.0.1:\(port)\(mount)",
        ]
        source.standardOutput = FileHandle.nullDevice
        source.standardError = FileHandle.nullDevice
        try source.run()
        sources.append(source)
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if let head = try? httpGet(port: port, path: mount, headOnly: true),
                head.hasPrefix("HTTP/1.0 200") || head.hasPrefix("HTTP/1.1 200")
            {
                return
            }
            usleep(100_000)
        }
        throw LineClient.Failure(description: "the mount \(mount) never came up: \(log)")
    }

    /// Sets the mount's title through Icecast's admin interface, as a studio's playout does.
    package func setTitle(_ title: String, mount: String) throws {
        let song = title.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? title
        let answer = try httpGet(
            port: port, path: "/admin/metadata?mount=\(mount)&mode=updinfo&song=\(song)",
            authorization: "admin:\(Self.password)")
        guard answer.contains("200") else { throw LineClient.Failure(description: "metadata update refused: \(answer)") }
    }

    /// SIGKILL to every process started, by PID, and waits for each.
    package func stop() {
        for process in sources + [server] where process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        sources = []
        dir.remove()
    }
}

/// Whether something accepts TCP connections on 127.0.0.1:`port`, within `timeout` seconds.
package enum TCPWait {
    package static func tcpAccepts(port: Int, timeout: Double) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if (try? httpGet(port: port, path: "/", headOnly: true)) != nil { return true }
            usleep(50_000)
        }
        return false
    }
}

/// A one-shot HTTP/1.0 GET on loopback; returns the head (or the whole answer, up to 64 KiB).
package func httpGet(port: Int, path: String, authorization: String? = nil, headOnly: Bool = false) throws -> String {
    guard let fd = connectLoopback(port: port) else {
        throw LineClient.Failure(description: "cannot connect to port \(port): errno \(errno)")
    }
    defer { close(fd) }
    var request = "GET \(path) HTTP/1.0\r\nHost: 127.0.0.1\r\nUser-Agent: tonearm-tests\r\n"
    if let authorization { request += "Authorization: Basic \(Data(authorization.utf8).base64EncodedString())\r\n" }
    request += "\r\n"
    _ = request.withCString { send(fd, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
    var answer: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while answer.count < 65536 {
        let count = recv(fd, &buffer, buffer.count, 0)
        guard count > 0 else { break }
        answer += buffer[0..<count]
        if headOnly, let text = String(bytes: answer, encoding: .isoLatin1), text.contains("\r\n\r\n") { break }
    }
    guard !answer.isEmpty else { throw LineClient.Failure(description: "no answer from port \(port)") }
    return String(decoding: answer, as: UTF8.self)
}
