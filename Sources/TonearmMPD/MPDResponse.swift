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

    /// A line whose prefix is ready and whose value is bytes with no line break (the database
    /// keeps tag values so): copied as they are.
    mutating func add(prefix: StaticString, clean value: UnsafeRawBufferPointer) {
        append(prefix)
        pending.append(contentsOf: value)
        endLine()
    }

    /// `file: directory/name` from a song's bytes; a line break in the name (a file may be
    /// called so) is written as a space.
    mutating func addFile(directory: String, name: UnsafeRawBufferPointer) {
        append("file: ")
        if !directory.isEmpty {
            pending.append(contentsOf: directory.utf8)
            pending.append(UInt8(ascii: "/"))
        }
        let start = pending.count
        pending.append(contentsOf: name)
        for index in start..<pending.count where pending[index] == 0x0A || pending[index] == 0x0D {
            pending[index] = UInt8(ascii: " ")
        }
        endLine()
    }

    mutating func add(_ key: String, _ value: Int) {
        pending.append(contentsOf: key.utf8)
        append(": ")
        appendDecimal(value)
        endLine()
    }

    /// `Last-Modified: 2024-01-31T12:00:00Z`, MPD's form (`MPDEnvironment.timestamp`).
    mutating func add(lastModified seconds: Int) {
        append("Last-Modified: ")
        MPDTimestamp.write(seconds, into: &pending)
        endLine()
    }

    /// Seconds with three decimals, as MPD writes `elapsed` and `duration` (`%.3f`), written
    /// without a format string: a listing writes one per song.
    mutating func add(_ key: String, seconds: Double) {
        guard seconds >= 0, seconds < 1e12 else { return add(key, String(format: "%.3f", seconds)) }
        let millis = Int((seconds * 1000).rounded())
        let fraction = millis % 1000
        pending.append(contentsOf: key.utf8)
        append(": ")
        appendDecimal(millis / 1000)
        append(fraction < 10 ? ".00" : fraction < 100 ? ".0" : ".")
        appendDecimal(fraction)
        endLine()
    }

    /// An integer's decimal digits, with no `String` made.
    private mutating func appendDecimal(_ value: Int) {
        if value < 0 {
            pending.append(UInt8(ascii: "-"))
            guard value != .min else { return pending.append(contentsOf: String(value).utf8.dropFirst()) }
            return appendDecimal(-value)
        }
        var divisor = 1
        while divisor <= value / 10 { divisor *= 10 }
        while divisor > 0 {
            pending.append(UInt8(ascii: "0") + UInt8(value / divisor % 10))
            divisor /= 10
        }
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

/// MPD's `Last-Modified` form, ISO 8601 in UTC, written byte by byte: a listing writes one per
/// song, and `String(format:)` cost more than the rest of the song's lines together.
enum MPDTimestamp {
    static func write(_ seconds: Int, into text: inout [UInt8]) {
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        let year = Int(parts.tm_year) + 1900
        guard (0...9999).contains(year) else {
            let wide = String(
                format: "%04d-%02d-%02dT%02d:%02d:%02dZ", year, Int(parts.tm_mon) + 1,
                Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec))
            return text.append(contentsOf: wide.utf8)
        }
        // Made in a fixed buffer, then appended at once: byte by byte, each append checks the
        // array's capacity and uniqueness.
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)
        withUnsafeMutableBytes(of: &digits) { out in
            var at = 0
            func put(_ value: Int, digits: Int, then separator: UInt8) {
                var divisor = digits == 4 ? 1000 : 10
                while divisor > 0 {
                    out[at] = UInt8(ascii: "0") + UInt8(value / divisor % 10)
                    at += 1
                    divisor /= 10
                }
                out[at] = separator
                at += 1
            }
            put(year, digits: 4, then: UInt8(ascii: "-"))
            put(Int(parts.tm_mon) + 1, digits: 2, then: UInt8(ascii: "-"))
            put(Int(parts.tm_mday), digits: 2, then: UInt8(ascii: "T"))
            put(Int(parts.tm_hour), digits: 2, then: UInt8(ascii: ":"))
            put(Int(parts.tm_min), digits: 2, then: UInt8(ascii: ":"))
            put(Int(parts.tm_sec), digits: 2, then: UInt8(ascii: "Z"))
            text.append(contentsOf: out[0..<at])
        }
    }
}
