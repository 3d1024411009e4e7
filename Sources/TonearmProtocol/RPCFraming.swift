import NIOCore

/// JSON-RPC messages as the lines that carry them: compact JSON and a newline.
package enum RPCFraming {
    /// A message as one line on the wire.
    package static func line(_ message: JSONValue) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.reserveCapacity(512)
        JSONCoding.serialize(message, into: &buffer)
        buffer.writeInteger(UInt8(ascii: "\n"))
        return buffer
    }

    /// A success response as one line: the bytes of `line(RPC.response(id:result:))` (its keys
    /// in sorted order: id, jsonrpc, result), without building the envelope's dictionary.
    package static func resultLine(id: JSONValue, result: JSONValue) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.reserveCapacity(512)
        buffer.writeStaticString(#"{"id":"#)
        JSONCoding.serialize(id, into: &buffer)
        buffer.writeStaticString(#","jsonrpc":"2.0","result":"#)
        JSONCoding.serialize(result, into: &buffer)
        buffer.writeStaticString("}\n")
        return buffer
    }
}
