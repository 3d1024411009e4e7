import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A TCP proxy on loopback that fails on command, between the daemon and a stream server: it
/// passes bytes, throttles what the server sends, stalls without closing, cuts every connection,
/// or refuses new ones (its listening socket is closed and opened again on the same port). One
/// thread accepts; each connection has a thread per direction.
///
/// `@unchecked Sendable`: every `var` is guarded by `lock`; `port` and `upstream` never change.
package final class FaultProxy: @unchecked Sendable {
    package enum Mode: Sendable, Equatable {
        case pass
        /// At most this many bytes a second from the server to the client.
        case throttle(bytesPerSecond: Int)
        /// Nothing more from the server reaches the client; the connection stays open.
        case stall
    }

    package let port: Int
    private let upstream: Int
    private let lock = NSLock()
    private var mode = Mode.pass
    private var listener: Int32 = -1
    private var connections: Set<Int32> = []
    private var stopped = false
    private var accepted = 0

    /// Proxies 127.0.0.1:`port` to 127.0.0.1:`upstream`.
    package init(upstream: Int) throws {
        self.upstream = upstream
        let (fd, port) = try listenOnLoopback(backlog: 16)
        self.port = port
        listener = fd
        startAccepting(fd)
    }

    deinit { stop() }

    /// Connections accepted so far (each reconnect of the client is one more).
    package var acceptedCount: Int { lock.withLock { accepted } }

    package func set(_ mode: Mode) { lock.withLock { self.mode = mode } }

    /// Closes every open connection (both ways) at once.
    package func cut() {
        lock.withLock { for fd in connections { shutdown(fd, Int32(SHUT_RDWR)) } }
    }

    /// `true`: new connections are refused (the port is closed); `false`: accepted again.
    package func refuse(_ refusing: Bool) {
        lock.withLock {
            guard !stopped else { return }
            if refusing, listener >= 0 {
                shutdown(listener, Int32(SHUT_RDWR))
                listener = -1
            } else if !refusing, listener < 0 {
                guard let (fd, _) = try? listenOnLoopback(port: port, backlog: 16) else { return }
                listener = fd
                startAccepting(fd)
            }
        }
    }

    /// Closes the listener and every connection; the threads end on their own. The shutdowns
    /// happen under the lock, so no descriptor was closed (and its number reused) meanwhile.
    package func stop() {
        lock.withLock {
            guard !stopped else { return }
            stopped = true
            if listener >= 0 { shutdown(listener, Int32(SHUT_RDWR)) }
            listener = -1
            for fd in connections { shutdown(fd, Int32(SHUT_RDWR)) }
        }
    }

    private func startAccepting(_ fd: Int32) {
        Thread { [self] in
            while true {
                let client = acceptClosingOnExec(fd)
                if client < 0 {
                    if errno == EINTR { continue }
                    break
                }
                serve(client)
            }
            close(fd)
        }.start()
    }

    private func serve(_ client: Int32) {
        let server = connectLoopback(port: upstream, timeout: 0) ?? -1
        let registered: Bool = lock.withLock {
            guard server >= 0, !stopped else { return false }
            accepted += 1
            connections.insert(client)
            connections.insert(server)
            return true
        }
        guard registered else {
            if server >= 0 { close(server) }
            close(client)
            return
        }
        let finished = Finished()
        for (from, to, downstream) in [(client, server, false), (server, client, true)] {
            Thread { [self] in
                pump(from: from, to: to, downstream: downstream)
                // Either direction ending ends the connection: the other side is told at once.
                lock.withLock {
                    shutdown(client, Int32(SHUT_RDWR))
                    shutdown(server, Int32(SHUT_RDWR))
                }
                if finished.second() {
                    lock.withLock {
                        connections.remove(client)
                        connections.remove(server)
                    }
                    close(client)
                    close(server)
                }
            }.start()
        }
    }

    /// Counts the two directions of a connection; the second to end closes both descriptors.
    /// `@unchecked Sendable`: `count` is read and written only under `lock`.
    private final class Finished: @unchecked Sendable {
        private let lock = NSLock()
        private var count = 0
        func second() -> Bool {
            lock.withLock {
                count += 1
                return count == 2
            }
        }
    }

    private func pump(from: Int32, to: Int32, downstream: Bool) {
        var buffer = [UInt8](repeating: 0, count: 16384)
        while true {
            let current = lock.withLock { mode }
            if downstream, current == .stall {
                // Read nothing: the server's bytes wait in the kernel, as behind a dead link.
                let pollRDHUP = Int16(0x2000)  // POLLRDHUP, which Glibc's module leaves out
                var poller = pollfd(fd: to, events: pollRDHUP, revents: 0)
                if poll(&poller, 1, 20) > 0 { return }
                continue
            }
            var limit = buffer.count
            if downstream, case .throttle(let rate) = current { limit = max(1, min(limit, rate / 20)) }
            let count = recv(from, &buffer, limit, 0)
            guard count > 0 else { return }
            var offset = 0
            while offset < count {
                let written = buffer.withUnsafeBytes { Glibc.send(to, $0.baseAddress! + offset, count - offset, Int32(MSG_NOSIGNAL)) }
                guard written > 0 else { return }
                offset += written
            }
            if downstream, case .throttle = current { usleep(50_000) }
        }
    }
}
