import Foundation

/// A plain client for MPD's text protocol on a Unix socket, independent of the daemon's code:
/// reads the greeting, sends a command line, collects the reply up to `OK` or `ACK`.
package final class MPDTestClient {
    package let connection: LineClient
    package let greeting: String

    package struct Reply: CustomStringConvertible {
        /// The `key: value` lines (and any other lines) before the end.
        package let lines: [String]
        /// `OK`, or the whole `ACK …` line.
        package let end: String

        package var ok: Bool { end == "OK" }
        package var ack: String? { end.hasPrefix("ACK ") ? end : nil }
        /// The first value of `key`.
        package subscript(_ key: String) -> String? { values(key).first }
        package func values(_ key: String) -> [String] {
            lines.compactMap { line in
                guard line.hasPrefix(key + ": ") else { return nil }
                return String(line.dropFirst(key.count + 2))
            }
        }
        package var description: String { (lines + [end]).joined(separator: "\n") }
    }

    package init(path: String, timeout: Double = 10) throws {
        let deadline = Date().addingTimeInterval(timeout)
        var client: LineClient?
        while client == nil {
            client = try? LineClient(path: path)
            if client == nil {
                guard Date() < deadline else { throw LineClient.Failure(description: "cannot connect to \(path)") }
                usleep(5_000)
            }
        }
        connection = client!
        greeting = try connection.readLine(timeout: timeout) ?? ""
    }

    /// Sends `line` and reads its reply.
    package func command(_ line: String, timeout: Double = 10) throws -> Reply {
        try connection.send(line: line)
        return try reply(timeout: timeout)
    }

    /// Reads one reply (up to `OK` or `ACK`); throws at end of stream.
    package func reply(timeout: Double = 10) throws -> Reply {
        var lines: [String] = []
        while true {
            guard let line = try connection.readLine(timeout: timeout) else {
                throw LineClient.Failure(description: "connection closed after \(lines)")
            }
            if line == "OK" || line.hasPrefix("ACK ") { return Reply(lines: lines, end: line) }
            lines.append(line)
        }
    }

    /// True when the daemon closed the connection (end of stream) within `timeout`.
    package func isClosed(timeout: Double = 5) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            do {
                guard try connection.readLine(timeout: 0.2) != nil else { return true }
            } catch {
                if (error as? LineClient.Failure)?.description.hasPrefix("no line") == true { continue }
                return true
            }
        }
        return false
    }
}

extension DaemonProcess {
    /// MPD's socket: `mpd.sock` beside the control socket, unless the test set another.
    package var mpdSocketPath: String { directory.path("mpd.sock") }

    package func connectMPD(timeout: Double = 10) throws -> MPDTestClient {
        _ = try connect(timeout: timeout)
        return try MPDTestClient(path: mpdSocketPath, timeout: timeout)
    }
}

/// Polls MPD's `status` until `predicate` holds (tests only).
package func waitForMPDStatus(
    _ client: MPDTestClient, timeout: Double = 10,
    _ predicate: (MPDTestClient.Reply) -> Bool
) throws -> MPDTestClient.Reply {
    let deadline = Date().addingTimeInterval(timeout)
    while true {
        let status = try client.command("status")
        if predicate(status) { return status }
        if Date() > deadline { throw LineClient.Failure(description: "MPD status never matched; last: \(status)") }
        usleep(10_000)
    }
}
