import Glibc
import TonearmMedia

/// A Snapcast server's TCP stream source as the output device (`output.kind = "snapcast"`):
/// snapserver listens (`source = tcp://HOST:PORT?name=…&mode=server`) and Tonearm connects and
/// sends raw interleaved PCM in the one format the source was configured with. Snapcast keeps the
/// rooms in sync; Tonearm keeps real time (pacing is always on for this sink), so snapserver's
/// buffer never runs over or dry. While paused nothing is sent, and Snapcast marks the stream idle.
///
/// Written by hand on a plain blocking socket: it is driven by the output thread, which owns it
/// as it owns an ALSA PCM (opened on the opener thread, handed over once), and an event loop would
/// only add a hop on the audio path. Not Sendable.
final class SnapcastOutput: OutputDevice {
    let format: PCMFormat
    let periodFrames: Int
    let bufferFrames: Int
    /// Its period: snapserver reads what it is sent as it comes, and pieces longer than its
    /// clients' buffering can absorb under load made them add or drop samples.
    var pacedWriteFrames: Int { periodFrames }
    private let address: String
    private var socket: Int32

    /// A write that snapserver does not take within this long counts as a lost server (it
    /// stopped reading): the output thread is never wedged behind it.
    static let sendTimeoutSeconds = 2

    /// 250 ms of silence, allocated once with the connection (see `drain`).
    private let silence: UnsafeMutableRawPointer
    private let silenceFrames: Int

    private init(socket: Int32, address: String, format: PCMFormat) {
        self.socket = socket
        self.address = address
        self.format = format
        // The pacing clock hands a paced device one piece of at least this much at a time. Each
        // send to a loopback server costs the sender the receiver's side too (the kernel delivers
        // it in the sender's context, and wakes snapserver): 200 ms pieces halve that against
        // ALSA's 100 ms. What has been sent is snapserver's anyway (it buffers a second or more),
        // so a larger piece delays no command: pause, seek and stop are heard after what was sent.
        periodFrames = format.sampleRate / 5
        bufferFrames = format.sampleRate / 5
        silenceFrames = format.sampleRate / 4
        silence = UnsafeMutableRawPointer.allocate(byteCount: silenceFrames * format.bytesPerFrame, alignment: 16)
        silence.initializeMemory(as: UInt8.self, repeating: 0, count: silenceFrames * format.bytesPerFrame)
    }

    deinit {
        close()
        silence.deallocate()
    }

    static func open(host: String, port: Int, format: PCMFormat) throws(EngineFailure) -> SnapcastOutput {
        let address = "\(host):\(port)"
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var found: UnsafeMutablePointer<addrinfo>?
        let resolved = getaddrinfo(host, String(port), &hints, &found)
        guard resolved == 0, let first = found else {
            throw EngineFailure(
                .deviceUnavailable, "snapserver at \(address): cannot resolve '\(host)': \(String(cString: gai_strerror(resolved)))")
        }
        defer { freeaddrinfo(found) }
        var lastError: Int32 = ECONNREFUSED
        var candidate: UnsafeMutablePointer<addrinfo>? = first
        while let info = candidate {
            candidate = info.pointee.ai_next
            let fd = Glibc.socket(info.pointee.ai_family, info.pointee.ai_socktype | Int32(SOCK_CLOEXEC.rawValue), info.pointee.ai_protocol)
            guard fd >= 0 else {
                lastError = errno
                continue
            }
            if connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 {
                var timeout = timeval(tv_sec: sendTimeoutSeconds, tv_usec: 0)
                setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                return SnapcastOutput(socket: fd, address: address, format: format)
            }
            lastError = errno
            Glibc.close(fd)
        }
        throw EngineFailure(
            .deviceUnavailable,
            "snapserver at \(address): \(String(cString: strerror(lastError))) "
                + "(is it running, with source = tcp://\(address)?mode=server?)")
    }

    func write(_ data: UnsafeRawPointer, frames: Int) -> OutputWriteOutcome {
        guard socket >= 0 else { return .lost("snapserver connection closed") }
        let total = frames * format.bytesPerFrame
        var offset = 0
        while offset < total {
            let sent = send(socket, data + offset, total - offset, Int32(MSG_NOSIGNAL))
            if sent > 0 {
                offset += sent
                continue
            }
            let code = errno
            if sent < 0 && code == EINTR { continue }
            if sent < 0 && (code == EAGAIN || code == EWOULDBLOCK) {
                return .lost("snapserver at \(address) took nothing for \(Self.sendTimeoutSeconds) s")
            }
            return .lost("snapserver at \(address): \(sent == 0 ? "connection closed" : String(cString: strerror(code)))")
        }
        return .wrote(frames)
    }

    /// What was sent is the server's: nothing waits here to be heard.
    func delayFrames() -> Int { 0 }

    /// Nothing is held here, so pausing is just sending nothing: in place.
    func pauseNow() -> Bool { true }
    func resume() {}
    /// What was sent cannot be called back; snapserver plays it out (a fraction of a second).
    func discard() {}
    func rewind(frames: Int) -> Int { 0 }
    var canRewind: Bool { false }

    /// snapserver reads its source in whole chunks (`chunk_ms`, 20 ms by default) and keeps a
    /// partial one until more comes, and when the data stops it calls the stream idle, which may
    /// cut what it was still handing on: the queue's last few ms could be lost. A quarter second
    /// of silence completes the chunk and keeps the stream playing past the end.
    func drain() {
        _ = write(silence, frames: silenceFrames)
    }

    func close() {
        guard socket >= 0 else { return }
        Glibc.close(socket)
        socket = -1
    }
}
