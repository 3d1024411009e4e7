import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A plain TCP client for the web remote's tests: HTTP/1.1 requests written by hand (so a test
/// can send what no well-behaved client would) and a WebSocket's frames.
package final class WebClient {
    package let fd: Int32

    package struct Response {
        package let status: Int
        package let headers: [String: String]
        package let body: [UInt8]
        package var text: String { String(decoding: body, as: UTF8.self) }
    }

    /// Connects to `host` (an IPv4 address; 127.0.0.1 by default):`port`.
    package init(host: String = "127.0.0.1", port: Int, timeout: Double = 10) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw LineClient.Failure(description: "socket: \(String(cString: strerror(errno)))") }
        var seconds = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - Double(Int(timeout))) * 1e6))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &seconds, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr(host)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw LineClient.Failure(description: "connect to \(host):\(port): \(reason)")
        }
    }

    deinit { close(fd) }

    /// Writes all of `bytes`; false when the peer has closed.
    @discardableResult
    package func send(_ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count <= 0 { return false }
            sent += count
        }
        return true
    }

    @discardableResult
    package func send(_ text: String) -> Bool { send(Array(text.utf8)) }

    /// Reads what arrives, up to `count` bytes; empty at the end of the stream; throws on a timeout.
    package func read(upTo count: Int = 65_536) throws -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: count)
        let read = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, count, 0) }
        if read < 0 {
            if errno == ECONNRESET { return [] }
            throw LineClient.Failure(description: "read: \(String(cString: strerror(errno)))")
        }
        return Array(buffer.prefix(read))
    }

    private var pending: [UInt8] = []

    private func readExactly(_ count: Int) throws -> [UInt8]? {
        while pending.count < count {
            let more = try read()
            if more.isEmpty { return nil }
            pending += more
        }
        defer { pending.removeFirst(count) }
        return Array(pending.prefix(count))
    }

    /// One response (its body by Content-Length), or nil when the server closed first.
    package func response() throws -> Response? {
        while !pending.containsSequence([13, 10, 13, 10]) {
            let more = try read()
            if more.isEmpty { return nil }
            pending += more
        }
        let end = pending.firstRange(of: [13, 10, 13, 10])!
        let head = String(decoding: pending[..<end.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
        pending.removeFirst(end.upperBound)
        let status = Int(head[0].split(separator: " ")[1]) ?? 0
        var headers: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let length = Int(headers["content-length"] ?? "0") ?? 0
        guard let body = try readExactly(length) else { return nil }
        return Response(status: status, headers: headers, body: body)
    }

    /// A GET (or `method`) with `headers`, and its response.
    package func request(_ method: String = "GET", _ path: String, headers: [String: String] = [:], body: [UInt8] = []) throws -> Response?
    {
        var text = "\(method) \(path) HTTP/1.1\r\n"
        if !headers.keys.contains(where: { $0.lowercased() == "host" }) { text += "Host: 127.0.0.1\r\n" }
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        if !body.isEmpty { text += "Content-Length: \(body.count)\r\n" }
        send(text + "\r\n")
        if !body.isEmpty { send(body) }
        return try response()
    }

    /// Asks to upgrade to a WebSocket at `/rpc`; the server's answer.
    package func upgrade(headers: [String: String] = [:]) throws -> Response? {
        try request(
            "GET", "/rpc",
            headers: [
                "Upgrade": "websocket", "Connection": "Upgrade",
                "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version": "13",
            ]
            .merging(headers) { $1 })
    }

    /// A masked frame, as a browser sends; `length` may claim more than `payload` holds.
    /// `masked: false` sends what no browser may (RFC 6455: a client masks every frame).
    package func sendFrame(opcode: UInt8 = 1, _ payload: [UInt8], claimedLength: UInt64? = nil, masked: Bool = true) -> Bool {
        let length = claimedLength ?? UInt64(payload.count)
        let maskBit: UInt8 = masked ? 0x80 : 0
        var frame: [UInt8] = [0x80 | opcode]
        if length < 126 {
            frame.append(maskBit | UInt8(length))
        } else if length <= 0xFFFF {
            frame += [maskBit | 126, UInt8(length >> 8), UInt8(length & 0xFF)]
        } else {
            frame.append(maskBit | 127)
            for shift in stride(from: 56, through: 0, by: -8) { frame.append(UInt8((length >> UInt64(shift)) & 0xFF)) }
        }
        guard masked else { return send(frame + payload) }
        let mask: [UInt8] = [0x12, 0x34, 0x56, 0x78]
        frame += mask
        frame += payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
        return send(frame)
    }

    package func sendText(_ text: String) -> Bool { sendFrame(Array(text.utf8)) }

    /// The next frame from the server: its opcode and payload; nil once the server closed.
    package func frame() throws -> (opcode: UInt8, payload: [UInt8])? {
        guard let head = try readExactly(2) else { return nil }
        var length = UInt64(head[1] & 0x7F)
        if length == 126 {
            guard let more = try readExactly(2) else { return nil }
            length = UInt64(more[0]) << 8 | UInt64(more[1])
        } else if length == 127 {
            guard let more = try readExactly(8) else { return nil }
            length = more.reduce(0) { $0 << 8 | UInt64($1) }
        }
        guard let payload = try readExactly(Int(length)) else { return nil }
        return (head[0] & 0x0F, payload)
    }

    /// The next text message, as JSON.
    package func message() throws -> [String: Any]? {
        while let frame = try frame() {
            guard frame.opcode == 1 else { if frame.opcode == 8 { return nil } else { continue } }
            return try JSONSerialization.jsonObject(with: Data(frame.payload)) as? [String: Any]
        }
        return nil
    }
}

extension Array where Element == UInt8 {
    func containsSequence(_ needle: [UInt8]) -> Bool { firstRange(of: needle) != nil }
}
