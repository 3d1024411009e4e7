import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A plain blocking Unix-socket client that speaks newline-delimited JSON: independent of the
/// daemon's own NIO code, so the tests check the protocol as any script would see it.
package final class LineClient {
    package let fd: Int32
    private var pending = Data()
    /// Reused for every read, so that timing loops measure the daemon, not this client's allocations.
    private var readBuffer = [UInt8](repeating: 0, count: 65536)

    package struct Failure: Error, CustomStringConvertible, Sendable {
        package let description: String
        package init(description: String) { self.description = description }
    }

    package init(path: String) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket() failed: \(errno)") }
        guard var address = unixSocketAddress(path) else { throw Failure(description: "path too long") }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        // No close here: a class whose init throws after every property is set still runs deinit,
        // which closes `fd`. Closing twice once closed another thread's newly opened descriptor.
        guard result == 0 else { throw Failure(description: "connect(\(path)) failed: errno \(errno)") }
    }

    deinit { close(fd) }

    package func send(raw data: Data) throws {
        var offset = 0
        while offset < data.count {
            // MSG_NOSIGNAL: a daemon that closed the connection is an error here, not SIGPIPE.
            let written = data.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, data.count - offset, Int32(MSG_NOSIGNAL)) }
            guard written > 0 else { throw Failure(description: "write failed: errno \(errno)") }
            offset += written
        }
    }

    package func send(line: String) throws { try send(raw: Data((line + "\n").utf8)) }

    /// Half-closes: the daemon sees end of input but can still answer.
    package func finishSending() { shutdown(fd, Int32(SHUT_WR)) }

    /// The next line, or nil on end of stream; throws after `timeout` seconds without one.
    package func readLine(timeout: Double = 10) throws -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let newline = pending.firstIndex(of: 0x0A) {
                let line = pending[pending.startIndex..<newline]
                pending = Data(pending[(newline + 1)...])
                return String(decoding: line, as: UTF8.self)
            }
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else { throw Failure(description: "no line within \(timeout) s") }
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, Int32(remaining * 1000))
            if ready <= 0 { continue }
            let count = readBuffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count <= 0 { return pending.isEmpty ? nil : String(decoding: pending, as: UTF8.self) }
            pending.append(contentsOf: readBuffer[0..<count])
        }
    }

    /// Sends pre-encoded MPD command bytes and waits for the reply's closing `OK` line without
    /// parsing the rest (benchmarks).
    package func mpdRoundTrip(_ request: Data) throws {
        try send(raw: request)
        // Each read's bytes are looked at once: the lines already seen are not scanned again
        // (a 4 MB listing in 64 KiB reads made that quadratic).
        var lineStart = pending.startIndex
        while true {
            switch Self.mpdReplyEnd(pending, from: lineStart) {
            case .end(let end):
                pending.removeSubrange(pending.startIndex..<end)
                return
            case .more(let next):
                lineStart = next
            }
            let count = readBuffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard count > 0 else { throw Failure(description: "connection closed") }
            pending.append(contentsOf: readBuffer[0..<count])
        }
    }

    private enum ReplyScan {
        /// The reply ends before this index.
        case end(Data.Index)
        /// No end yet: the last line, unfinished, starts here.
        case more(Data.Index)
    }

    /// Where an MPD reply ends in `bytes`, looking from `lineStart` (a line's start): after an
    /// `OK` or `ACK` line.
    private static func mpdReplyEnd(_ bytes: Data, from lineStart: Data.Index) -> ReplyScan {
        var lineStart = lineStart
        while let newline = bytes[lineStart...].firstIndex(of: 0x0A) {
            let line = bytes[lineStart..<newline]
            if line.elementsEqual("OK".utf8) || line.starts(with: "ACK ".utf8) { return .end(newline + 1) }
            lineStart = newline + 1
        }
        return .more(lineStart)
    }

    /// Sends pre-encoded request bytes and waits for one answer line without parsing it (benchmarks).
    package func roundTrip(_ request: Data) throws {
        try send(raw: request)
        while true {
            if let newline = pending.firstIndex(of: 0x0A) {
                pending.removeSubrange(pending.startIndex...newline)
                return
            }
            let count = readBuffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard count > 0 else { throw Failure(description: "connection closed") }
            pending.append(contentsOf: readBuffer[0..<count])
        }
    }

    /// The next line parsed as a JSON object.
    package func readJSON(timeout: Double = 10) throws -> [String: Any] {
        guard let line = try readLine(timeout: timeout) else { throw Failure(description: "connection closed") }
        guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
            throw Failure(description: "not a JSON object: \(line)")
        }
        return object
    }

    private var nextID = 0

    /// Sends a request and returns its response, skipping notifications (kept in `notifications`).
    package func call(_ method: String, _ params: [String: Any] = [:], timeout: Double = 10) throws -> [String: Any] {
        nextID += 1
        let request: [String: Any] = ["jsonrpc": "2.0", "id": nextID, "method": method, "params": params]
        try send(line: String(decoding: try JSONSerialization.data(withJSONObject: request), as: UTF8.self))
        while true {
            let message: [String: Any]
            do {
                message = try readJSON(timeout: timeout)
            } catch {
                throw Failure(description: "\(method) (request \(nextID)): \(error)")
            }
            if message["id"] == nil && message["method"] != nil {
                notifications.append(message)
                continue
            }
            return message
        }
    }

    package var notifications: [[String: Any]] = []
}

extension Dictionary where Key == String, Value == Any {
    package var result: [String: Any]? { self["result"] as? [String: Any] }
    package var errorCode: Int? { (self["error"] as? [String: Any])?["code"] as? Int }
    package var errorMessage: String? { (self["error"] as? [String: Any])?["message"] as? String }
    package var errorData: [String: Any]? { (self["error"] as? [String: Any])?["data"] as? [String: Any] }
    /// `result.state.state`, the state's name.
    package var stateName: String? { (result?["state"] as? [String: Any])?["state"] as? String }
}
