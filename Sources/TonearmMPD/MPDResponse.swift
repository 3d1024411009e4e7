import Foundation
import NIOCore

/// An MPD reply being written: `key: value` lines, then `OK`, `list_OK` or an `ACK` line. No
/// tree is built in between. Lines gather in a plain byte array and reach the connection's
/// `ByteBuffer` in blocks of up to 64 KiB: a 10,000-song listing is 200,000 small lines, and each
/// small write into a `ByteBuffer` costs its checks (uniqueness, capacity, exclusive access) more
/// than the copy.
struct MPDResponse {
    private var storage: ByteBuffer
    private var pending: [UInt8] = []

    init(allocator: ByteBufferAllocator = ByteBufferAllocator()) {
        storage = allocator.buffer(capacity: 256)
    }

    /// The reply so far, every line written to it.
    var buffer: ByteBuffer {
        mutating get {
            flush()
            return storage
        }
        _modify {
            flush()
            yield &storage
        }
    }

    private mutating func flush() {
        guard !pending.isEmpty else { return }
        storage.writeBytes(pending)
        pending.removeAll(keepingCapacity: true)
    }

    private mutating func append(_ text: StaticString) {
        pending.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    private mutating func endLine() {
        pending.append(0x0A)
        if pending.count >= 64 << 10 { flush() }
    }

    /// `key: value`; a line break inside the value (a file name) would end the line early and is
    /// written as a space.
    mutating func add(_ key: String, _ value: String) {
        pending.append(contentsOf: key.utf8)
        append(": ")
        if value.utf8.contains(where: { $0 == 0x0A || $0 == 0x0D }) {
            pending.append(contentsOf: String(value.map { $0 == "\n" || $0 == "\r" || $0 == "\r\n" ? " " : $0 }).utf8)
        } else {
            pending.append(contentsOf: value.utf8)
        }
        endLine()
    }

    /// A line whose prefix (`Artist: `) is ready in bytes and whose value holds no line break
    /// (`MediaTags.Entry` values never do): no scan.
    mutating func add(prefix: StaticString, clean value: String) {
        append(prefix)
        pending.append(contentsOf: value.utf8)
        endLine()
    }

    mutating func add(_ key: String, _ value: Int) {
        add(key, String(value))
    }

    /// Seconds with three decimals, as MPD writes `elapsed` and `duration` (`%.3f`), written
    /// without a format string: a listing writes one per song.
    mutating func add(_ key: String, seconds: Double) {
        guard seconds >= 0, seconds < 1e12 else { return add(key, String(format: "%.3f", seconds)) }
        let millis = Int((seconds * 1000).rounded())
        let fraction = millis % 1000
        pending.append(contentsOf: key.utf8)
        append(": ")
        pending.append(contentsOf: String(millis / 1000).utf8)
        append(fraction < 10 ? ".00" : fraction < 100 ? ".0" : ".")
        pending.append(contentsOf: String(fraction).utf8)
        endLine()
    }

    mutating func add(_ key: String, _ flag: Bool) {
        add(key, flag ? "1" : "0")
    }

    /// `binary: N`, the N bytes, and the line's end: a chunk of a file (`albumart`, `readpicture`).
    mutating func add(binary bytes: ArraySlice<UInt8>) {
        add("binary", bytes.count)
        pending.append(contentsOf: bytes)
        endLine()
    }

    mutating func ok() {
        append("OK")
        endLine()
    }

    mutating func listOK() {
        append("list_OK")
        endLine()
    }

    /// `ACK [code@index] {command} message`.
    mutating func ack(_ error: MPDError, index: Int, command: String) {
        pending.append(contentsOf: "ACK [\(error.code.rawValue)@\(index)] {\(command)} \(error.message)".utf8)
        endLine()
    }
}
