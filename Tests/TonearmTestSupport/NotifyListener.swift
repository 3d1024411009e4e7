import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Plays systemd's part of sd_notify(3) in tests: a datagram socket at `path` (the daemon's
/// `NOTIFY_SOCKET`) that collects what the daemon sends.
package final class NotifyListener {
    package let path: String
    private let fd: Int32

    package init(path: String) throws {
        self.path = path
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0, bindUnixSocket(fd, path) == 0 else { throw LineClient.Failure(description: "cannot bind \(path)") }
    }

    deinit {
        close(fd)
        unlink(path)
    }

    /// The next message, or nil when none came within `timeout` seconds.
    package func next(timeout: Double) -> String? {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, Int32(timeout * 1000)) == 1 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = recv(fd, &buffer, buffer.count, 0)
        return count > 0 ? String(decoding: buffer.prefix(count), as: UTF8.self) : nil
    }

    /// Messages until one contains `text` (returned last), or throws after `timeout` seconds.
    @discardableResult
    package func wait(for text: String, timeout: Double = 10) throws -> [String] {
        let deadline = Date().addingTimeInterval(timeout)
        var seen: [String] = []
        while Date() < deadline {
            guard let message = next(timeout: deadline.timeIntervalSinceNow) else { break }
            seen.append(message)
            if message.contains(text) { return seen }
        }
        throw LineClient.Failure(description: "no '\(text)' from the daemon; got \(seen)")
    }
}
