import Foundation
import NIOCore

/// An MPD reply being written: `key: value` lines straight into the connection's `ByteBuffer`,
/// then `OK`, `list_OK` or an `ACK` line. No tree is built in between.
struct MPDResponse {
    var buffer: ByteBuffer

    init(allocator: ByteBufferAllocator = ByteBufferAllocator()) {
        buffer = allocator.buffer(capacity: 256)
    }

    /// `key: value`; a line break inside the value (a tag, a file name) would end the line early
    /// and is written as a space.
    mutating func add(_ key: String, _ value: String) {
        buffer.writeString(key)
        buffer.writeStaticString(": ")
        if value.utf8.contains(where: { $0 == 0x0A || $0 == 0x0D }) {
            buffer.writeString(String(value.map { $0 == "\n" || $0 == "\r" || $0 == "\r\n" ? " " : $0 }))
        } else {
            buffer.writeString(value)
        }
        buffer.writeStaticString("\n")
    }

    mutating func add(_ key: String, _ value: Int) {
        add(key, String(value))
    }

    /// Seconds with three decimals, as MPD writes `elapsed` and `duration`.
    mutating func add(_ key: String, seconds: Double) {
        add(key, String(format: "%.3f", seconds))
    }

    mutating func add(_ key: String, _ flag: Bool) {
        add(key, flag ? "1" : "0")
    }

    mutating func ok() { buffer.writeStaticString("OK\n") }
    mutating func listOK() { buffer.writeStaticString("list_OK\n") }

    /// `ACK [code@index] {command} message`.
    mutating func ack(_ error: MPDError, index: Int, command: String) {
        buffer.writeString("ACK [\(error.code.rawValue)@\(index)] {\(command)} \(error.message)\n")
    }
}
