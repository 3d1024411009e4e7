import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A small HTTP/1.1 server on loopback for the network-source tests, written on plain sockets
/// and threads so that it can misbehave exactly as a test asks: it serves files with `Range`
/// (206 and `Content-Range`), paces a "live" stream at a given byte rate with no length (as
/// Icecast does), and on request redirects, answers 404, sends HTML, sends headers without end,
/// or cuts a body after so many bytes. One thread accepts; each connection has its own thread.
///
/// `@unchecked Sendable`: `routes`, `requests`, `connections` and `cutAfter` are guarded by `lock`;
/// `listener` and `port` are set once in `init`.
package final class TestHTTPServer: @unchecked Sendable {
    package enum Route: Sendable {
        /// The file's bytes, with Content-Length, Accept-Ranges and Range.
        case file(path: String, contentType: String)
        /// The file's bytes with Content-Length but no ranges (`Range` ignored, no Accept-Ranges),
        /// as `python3 -m http.server` serves them.
        case fileWithoutRanges(path: String, contentType: String)
        /// `file`, except that a request for a range from past the first MiB gets header lines,
        /// one every half second (each read is answered well within any timeout), for ever.
        case fileTricklingRanges(path: String, contentType: String)
        /// `file`, except that no response sends a byte at or past `offset`: the body stops there
        /// and the connection is held open (a range from past it gets its headers and nothing
        /// more), as a server that accepts every request and never sends the rest.
        case fileStallingAt(path: String, contentType: String, offset: Int)
        /// The file's bytes in a loop without end, `bytesPerSecond` at a time, no length: a radio.
        case live(path: String, contentType: String, bytesPerSecond: Int)
        /// `live`, with ICY metadata as Shoutcast and Icecast send it to a client that asks
        /// (`Icy-MetaData: 1`): a block after every `metaint` bytes of audio, the title changing
        /// to `titles[n]` in the block after the n-th run of audio.
        case liveICY(path: String, contentType: String, bytesPerSecond: Int, metaint: Int, titles: [Int: String])
        case redirect(location: String)
        case status(code: Int, reason: String)
        case html
        /// Header lines, one every few milliseconds, for ever.
        case endlessHeaders
        /// `body` as it is, with a length.
        case text(body: String, contentType: String)
    }

    package struct Request: Sendable {
        package let path: String
        package let range: String?
    }

    package let port: Int
    private let listener: Int32
    private let lock = NSLock()
    private var routes: [String: Route] = [:]
    private var requestLog: [Request] = []
    private var connections: Set<Int32> = []
    private var stopped = false
    /// The next response body of `path` is cut (the connection closed) after this many bytes.
    private var cutAfter: [String: Int] = [:]
    /// The next response body of `path` stops after this many bytes, the connection left open.
    private var stallAfter: [String: Int] = [:]

    package init() throws {
        let (listener, port) = try listenOnLoopback()
        self.listener = listener
        self.port = port
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    deinit { stop() }

    package func url(_ path: String) -> String { "http://127.0.0.1:\(port)\(path)" }

    package func route(_ path: String, _ route: Route) { lock.withLock { routes[path] = route } }

    /// Cuts the next response of `path` after `bytes` of its body.
    package func cutNext(_ path: String, after bytes: Int) { lock.withLock { cutAfter[path] = bytes } }

    /// Stalls the next response of `path` after `bytes` of its body: nothing more is sent, and the
    /// connection stays open until the client closes it or the server stops.
    package func stallNext(_ path: String, after bytes: Int) { lock.withLock { stallAfter[path] = bytes } }

    package var requests: [Request] { lock.withLock { requestLog } }

    /// Closes the listener and every connection; the threads end on their own.
    /// The shutdowns happen under the lock: a connection's thread takes its descriptor out of
    /// `connections` under the lock before closing it, so none of them can have been closed (and
    /// its number reused by another socket) meanwhile.
    package func stop() {
        lock.withLock {
            guard !stopped else { return }
            stopped = true
            shutdown(listener, Int32(SHUT_RDWR))
            for fd in connections { shutdown(fd, Int32(SHUT_RDWR)) }
        }
    }

    private func acceptLoop() {
        while true {
            let fd = acceptClosingOnExec(listener)
            if fd < 0 {
                if errno == EINTR { continue }
                break
            }
            let accepted: Bool = lock.withLock {
                guard !stopped else { return false }
                connections.insert(fd)
                return true
            }
            guard accepted else {
                close(fd)
                break
            }
            let thread = Thread { [self] in
                serve(fd)
                lock.withLock { _ = connections.remove(fd) }
                close(fd)
            }
            thread.start()
        }
        close(listener)
    }

    private func serve(_ fd: Int32) {
        guard let head = readHead(fd) else { return }
        let lines = head.split(separator: "\r\n", omittingEmptySubsequences: false)
        let parts = lines.first?.split(separator: " ") ?? []
        guard parts.count >= 2 else { return }
        let path = String(parts[1])
        let range = lines.dropFirst().first { $0.lowercased().hasPrefix("range:") }
            .map { String($0.dropFirst("range:".count)).trimmingCharacters(in: .whitespaces) }
        let (route, cutBody, stall): (Route?, Int?, Int?) = lock.withLock {
            requestLog.append(Request(path: path, range: range))
            return (routes[path], cutAfter.removeValue(forKey: path), stallAfter.removeValue(forKey: path))
        }
        defer { if stall != nil { waitForClose(fd) } }
        let cut = cutBody ?? stall
        switch route {
        case nil:
            send(fd, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        case .status(let code, let reason):
            send(fd, "HTTP/1.1 \(code) \(reason)\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        case .redirect(let location):
            send(fd, "HTTP/1.1 302 Found\r\nLocation: \(location)\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        case .html:
            let body =
                "<!DOCTYPE html><html><head><title>Not audio</title></head><body>" + String(repeating: "<p>hello</p>", count: 400)
                + "</body></html>"
            send(
                fd, "HTTP/1.1 200 OK\r\nContent-Type: audio/mpeg\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body)
        case .text(let body, let contentType):
            send(
                fd,
                "HTTP/1.1 200 OK\r\nContent-Type: \(contentType)\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body)
        case .endlessHeaders:
            guard send(fd, "HTTP/1.1 200 OK\r\n") else { return }
            var count = 0
            while send(fd, "X-Filler-\(count): \(String(repeating: "x", count: 60))\r\n") {
                count += 1
                usleep(2_000)
            }
        case .file(let filePath, let contentType):
            serveFile(fd, filePath, contentType: contentType, range: range, cut: cut)
        case .fileTricklingRanges(let filePath, let contentType):
            if let range, range.hasPrefix("bytes="),
                let from = Int(range.dropFirst("bytes=".count).prefix { $0 != "-" }), from > 1 << 20
            {
                guard send(fd, "HTTP/1.1 206 Partial Content\r\n") else { return }
                var count = 0
                while send(fd, "X-Filler-\(count): \(String(repeating: "x", count: 60))\r\n") {
                    count += 1
                    usleep(500_000)
                }
                return
            }
            serveFile(fd, filePath, contentType: contentType, range: range, cut: cut)
        case .fileStallingAt(let filePath, let contentType, let offset):
            serveFile(fd, filePath, contentType: contentType, range: range, cut: cut, stopAt: offset)
            // A cut (`cutNext`) closes; otherwise the rest never comes, on an open connection.
            if cutBody == nil && stall == nil { waitForClose(fd) }
        case .fileWithoutRanges(let filePath, let contentType):
            guard let data = FileManager.default.contents(atPath: filePath) else { return }
            guard send(fd, "HTTP/1.1 200 OK\r\nContent-Type: \(contentType)\r\nContent-Length: \(data.count)\r\nConnection: close\r\n\r\n")
            else { return }
            send(fd, data)
        case .live(let filePath, let contentType, let rate):
            serveLive(fd, filePath, contentType: contentType, bytesPerSecond: rate, cut: cut)
        case .liveICY(let filePath, let contentType, let rate, let metaint, let titles):
            serveLive(fd, filePath, contentType: contentType, bytesPerSecond: rate, cut: cut, icy: (metaint, titles))
        }
    }

    private func serveFile(
        _ fd: Int32, _ path: String, contentType: String, range: String?, cut: Int?,
        stopAt: Int? = nil
    ) {
        guard let data = FileManager.default.contents(atPath: path) else {
            send(fd, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            return
        }
        var start = 0
        var end = data.count - 1
        var status = "200 OK"
        var extra = ""
        if let range, range.hasPrefix("bytes=") {
            let spec = range.dropFirst("bytes=".count).split(separator: "-", omittingEmptySubsequences: false)
            if let first = spec.first, let from = Int(first) {
                start = from
                if spec.count > 1, let to = Int(spec[1]) { end = min(to, data.count - 1) }
            }
            guard start < data.count else {
                send(
                    fd,
                    "HTTP/1.1 416 Range Not Satisfiable\r\nContent-Range: bytes */\(data.count)\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                )
                return
            }
            status = "206 Partial Content"
            extra = "Content-Range: bytes \(start)-\(end)/\(data.count)\r\n"
        }
        let length = end - start + 1
        guard
            send(
                fd,
                "HTTP/1.1 \(status)\r\nContent-Type: \(contentType)\r\nContent-Length: \(length)\r\nAccept-Ranges: bytes\r\n\(extra)Connection: close\r\n\r\n"
            )
        else { return }
        let stop = min(start + min(length, cut ?? length), max(start, stopAt ?? data.count))
        let body = data.subdata(in: start..<stop)
        send(fd, body)
    }

    private func serveLive(
        _ fd: Int32, _ path: String, contentType: String, bytesPerSecond: Int, cut: Int?,
        icy: (metaint: Int, titles: [Int: String])? = nil
    ) {
        guard let data = FileManager.default.contents(atPath: path), !data.isEmpty else { return }
        let icyHeader = icy.map { "icy-metaint: \($0.metaint)\r\nicy-name: Tonearm Test Radio\r\n" } ?? ""
        guard
            send(fd, "HTTP/1.1 200 OK\r\nContent-Type: \(contentType)\r\n\(icyHeader)Cache-Control: no-cache\r\nConnection: close\r\n\r\n")
        else { return }
        let piece = max(1, bytesPerSecond / 20)
        var offset = 0
        var sent = 0
        let started = Date()
        while cut.map({ sent < $0 }) ?? true {
            var count = min(piece, data.count - offset)
            if let cut { count = min(count, cut - sent) }
            if let icy { count = min(count, icy.metaint - sent % icy.metaint) }
            guard send(fd, data.subdata(in: offset..<(offset + count))) else { return }
            sent += count
            offset = (offset + count) % data.count
            if let icy, sent % icy.metaint == 0 {
                guard send(fd, Self.icyBlock(icy.titles[sent / icy.metaint - 1])) else { return }
            }
            // Real time: the bytes sent so far are due at sent / rate seconds after the start.
            let due = Double(sent) / Double(bytesPerSecond) - Date().timeIntervalSince(started)
            if due > 0 { usleep(useconds_t(due * 1_000_000)) }
        }
    }

    /// An ICY metadata block: its length in 16-byte units, then `StreamTitle='…';` padded with
    /// zeros; a single zero byte when the title does not change.
    static func icyBlock(_ title: String?) -> Data {
        guard let title else { return Data([0]) }
        var text = Array("StreamTitle='\(title)';".utf8)
        let units = (text.count + 15) / 16
        text += [UInt8](repeating: 0, count: units * 16 - text.count)
        return Data([UInt8(units)] + text)
    }

    /// Sleeps until the peer closes the connection (or the server stops and shuts it down).
    private func waitForClose(_ fd: Int32) {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while recv(fd, &buffer, buffer.count, 0) > 0 {}
    }

    private func readHead(_ fd: Int32) -> String? {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while bytes.count < 65536 {
            let count = recv(fd, &buffer, buffer.count, 0)
            guard count > 0 else { return nil }
            bytes += buffer[0..<count]
            if let text = String(bytes: bytes, encoding: .utf8), let end = text.range(of: "\r\n\r\n") {
                return String(text[..<end.lowerBound])
            }
        }
        return nil
    }

    @discardableResult
    private func send(_ fd: Int32, _ text: String) -> Bool { send(fd, Data(text.utf8)) }

    @discardableResult
    private func send(_ fd: Int32, _ data: Data) -> Bool {
        var offset = 0
        while offset < data.count {
            let written = data.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, data.count - offset, Int32(MSG_NOSIGNAL)) }
            guard written > 0 else { return false }
            offset += written
        }
        return true
    }
}
