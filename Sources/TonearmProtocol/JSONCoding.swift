import NIOCore

/// A strict JSON reader and writer for `JSONValue`, working on bytes: the control socket parses
/// and writes every message with these, without Foundation's coders (about ten times the cost).
package enum JSONCoding {
    package struct SyntaxError: Error, CustomStringConvertible {
        package let description: String
    }

    /// Nesting deeper than this is refused, so a hostile line cannot exhaust the stack.
    package static let maximumDepth = 64

    /// - Parameter keepsIDText: a number as the top-level object's "id" is kept as the text it
    ///   was sent in (`.encoded`), so that it is echoed exactly: a Double cannot hold every
    ///   integer a client may use (9007199254740993).
    package static func parse(_ bytes: UnsafeRawBufferPointer, keepsIDText: Bool = false) throws(SyntaxError) -> JSONValue {
        var reader = Reader(bytes: bytes, keepsIDText: keepsIDText)
        reader.skipWhitespace()
        let value = try reader.value(depth: 0)
        reader.skipWhitespace()
        guard reader.atEnd else { throw reader.error("unexpected data after the JSON value") }
        return value
    }

    /// Writes `value` as compact JSON, keys sorted, straight into `output` (no intermediate
    /// array: a reply costs one buffer).
    package static func serialize(_ value: JSONValue, into output: inout ByteBuffer) {
        switch value {
        case .null: output.writeStaticString("null")
        case .bool(let flag): output.writeStaticString(flag ? "true" : "false")
        case .number(let number): writeNumber(number, into: &output)
        case .string(let text): writeString(text, into: &output)
        case .array(let items):
            output.writeInteger(UInt8(ascii: "["))
            var first = true
            for item in items {
                if !first { output.writeInteger(UInt8(ascii: ",")) }
                first = false
                serialize(item, into: &output)
            }
            output.writeInteger(UInt8(ascii: "]"))
        case .object(let object):
            output.writeInteger(UInt8(ascii: "{"))
            // Sorted keys: the same value always serializes to the same bytes.
            var first = true
            for (key, member) in object.sorted(by: { $0.key < $1.key }) {
                if !first { output.writeInteger(UInt8(ascii: ",")) }
                first = false
                writeString(key, into: &output)
                output.writeInteger(UInt8(ascii: ":"))
                serialize(member, into: &output)
            }
            output.writeInteger(UInt8(ascii: "}"))
        case .encoded(let bytes):
            var bytes = bytes
            output.writeBuffer(&bytes)
        }
    }

    private static func writeNumber(_ number: Double, into output: inout ByteBuffer) {
        guard number.isFinite else {
            output.writeStaticString("null")
            return
        }
        if number == number.rounded(), abs(number) < 9e15 {
            writeInteger(Int64(number), into: &output)
        } else {
            // Swift prints the shortest text that reads back as the same Double; JSON accepts it.
            output.writeString("\(number)")
        }
    }

    /// Decimal digits without building a String.
    private static func writeInteger(_ value: Int64, into output: inout ByteBuffer) {
        if value < 0 { output.writeInteger(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var index = digits.count
            repeat {
                index -= 1
                digits[index] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            output.writeBytes(UnsafeRawBufferPointer(rebasing: UnsafeMutableRawBufferPointer(digits)[index...]))
        }
    }

    private static func writeString(_ text: String, into output: inout ByteBuffer) {
        output.writeInteger(UInt8(ascii: "\""))
        // Most strings need no escape: written in one go.
        if !text.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
            output.writeString(text)
        } else {
            for byte in text.utf8 {
                switch byte {
                case UInt8(ascii: "\""): output.writeStaticString(#"\""#)
                case UInt8(ascii: "\\"): output.writeStaticString(#"\\"#)
                case 0x0A: output.writeStaticString(#"\n"#)
                case 0x0D: output.writeStaticString(#"\r"#)
                case 0x09: output.writeStaticString(#"\t"#)
                case 0..<0x20:
                    let hex: StaticString = "0123456789abcdef"
                    output.writeStaticString(#"\u00"#)
                    output.writeInteger(hex.utf8Start[Int(byte >> 4)])
                    output.writeInteger(hex.utf8Start[Int(byte & 0xF)])
                default: output.writeInteger(byte)
                }
            }
        }
        output.writeInteger(UInt8(ascii: "\""))
    }

    private struct Reader {
        let bytes: UnsafeRawBufferPointer
        let keepsIDText: Bool
        var index = 0

        var atEnd: Bool { index >= bytes.count }
        var current: UInt8? { index < bytes.count ? bytes[index] : nil }

        func error(_ message: String) -> SyntaxError { SyntaxError(description: "\(message) at byte \(index)") }

        mutating func skipWhitespace() {
            while let byte = current, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { index += 1 }
        }

        mutating func expect(_ literal: String, _ value: JSONValue) throws(SyntaxError) -> JSONValue {
            for byte in literal.utf8 {
                guard current == byte else { throw error("invalid literal") }
                index += 1
            }
            return value
        }

        mutating func value(depth: Int) throws(SyntaxError) -> JSONValue {
            guard depth < JSONCoding.maximumDepth else { throw error("nesting deeper than \(JSONCoding.maximumDepth)") }
            guard let byte = current else { throw error("unexpected end of input") }
            switch byte {
            case UInt8(ascii: "{"): return try object(depth: depth)
            case UInt8(ascii: "["): return try array(depth: depth)
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"): return try expect("true", .bool(true))
            case UInt8(ascii: "f"): return try expect("false", .bool(false))
            case UInt8(ascii: "n"): return try expect("null", .null)
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
            default: throw error("unexpected character")
            }
        }

        mutating func object(depth: Int) throws(SyntaxError) -> JSONValue {
            index += 1
            var object: [String: JSONValue] = [:]
            skipWhitespace()
            if current == UInt8(ascii: "}") {
                index += 1
                return .object(object)
            }
            while true {
                skipWhitespace()
                guard current == UInt8(ascii: "\"") else { throw error("expected a string key") }
                let key = try string()
                skipWhitespace()
                guard current == UInt8(ascii: ":") else { throw error("expected ':'") }
                index += 1
                skipWhitespace()
                // Duplicate names are legal JSON with no agreed meaning: refuse rather than guess.
                guard object[key] == nil else { throw error("duplicate member \"\(key.prefix(64))\"") }
                if keepsIDText, depth == 0, key == "id", let byte = current,
                    byte == UInt8(ascii: "-") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                {
                    let start = index
                    let number = try number()
                    // One no Double can hold (1e400) stays a number, and is refused as an id.
                    object[key] =
                        number.isFinite
                        ? .encoded(ByteBuffer(bytes: UnsafeRawBufferPointer(rebasing: bytes[start..<index]))) : .number(number)
                } else {
                    object[key] = try value(depth: depth + 1)
                }
                skipWhitespace()
                switch current {
                case UInt8(ascii: ","): index += 1
                case UInt8(ascii: "}"):
                    index += 1
                    return .object(object)
                default: throw error("expected ',' or '}'")
                }
            }
        }

        mutating func array(depth: Int) throws(SyntaxError) -> JSONValue {
            index += 1
            var items: [JSONValue] = []
            skipWhitespace()
            if current == UInt8(ascii: "]") {
                index += 1
                return .array(items)
            }
            while true {
                skipWhitespace()
                items.append(try value(depth: depth + 1))
                skipWhitespace()
                switch current {
                case UInt8(ascii: ","): index += 1
                case UInt8(ascii: "]"):
                    index += 1
                    return .array(items)
                default: throw error("expected ',' or ']'")
                }
            }
        }

        mutating func string() throws(SyntaxError) -> String {
            index += 1
            // Most strings (every key, every method name) are plain ASCII without escapes: made
            // straight from the input, with no buffer and no validation to do.
            var end = index
            while end < bytes.count, case let byte = bytes[end], byte != UInt8(ascii: "\""),
                byte != UInt8(ascii: "\\"), byte >= 0x20, byte < 0x80
            {
                end += 1
            }
            if end < bytes.count, bytes[end] == UInt8(ascii: "\"") {
                let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[index..<end]), as: UTF8.self)
                index = end + 1
                return text
            }
            var utf8: [UInt8] = []
            while true {
                guard let byte = current else { throw error("unterminated string") }
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    guard let text = String(validating: utf8, as: UTF8.self) else { throw error("invalid UTF-8 in a string") }
                    return text
                case UInt8(ascii: "\\"):
                    guard let escape = current else { throw error("unterminated escape") }
                    index += 1
                    switch escape {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): utf8.append(escape)
                    case UInt8(ascii: "b"): utf8.append(0x08)
                    case UInt8(ascii: "f"): utf8.append(0x0C)
                    case UInt8(ascii: "n"): utf8.append(0x0A)
                    case UInt8(ascii: "r"): utf8.append(0x0D)
                    case UInt8(ascii: "t"): utf8.append(0x09)
                    case UInt8(ascii: "u"):
                        var scalar = try hex4()
                        if (0xD800..<0xDC00).contains(scalar) {
                            // A high surrogate must be followed by \u and a low one.
                            guard current == UInt8(ascii: "\\") else { throw error("lone surrogate") }
                            index += 1
                            guard current == UInt8(ascii: "u") else { throw error("lone surrogate") }
                            index += 1
                            let low = try hex4()
                            guard (0xDC00..<0xE000).contains(low) else { throw error("invalid surrogate pair") }
                            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                        }
                        guard let unicode = Unicode.Scalar(scalar) else { throw error("invalid \\u escape") }
                        utf8.append(contentsOf: String(Character(unicode)).utf8)
                    default: throw error("invalid escape")
                    }
                case 0..<0x20:
                    throw error("control character in a string")
                default:
                    utf8.append(byte)
                }
            }
        }

        mutating func hex4() throws(SyntaxError) -> UInt32 {
            var value: UInt32 = 0
            for _ in 0..<4 {
                guard let byte = current else { throw error("short \\u escape") }
                index += 1
                let digit: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
                default: throw error("invalid \\u escape")
                }
                value = value << 4 | UInt32(digit)
            }
            return value
        }

        mutating func number() throws(SyntaxError) -> Double {
            let start = index
            if current == UInt8(ascii: "-") { index += 1 }
            func digits(_ reader: inout Reader) -> Int {
                let begin = reader.index
                while let byte = reader.current, byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") { reader.index += 1 }
                return reader.index - begin
            }
            let integerStart = index
            let integerDigits = digits(&self)
            guard integerDigits > 0 else { throw error("invalid number") }
            if integerDigits > 1 && bytes[integerStart] == UInt8(ascii: "0") { throw error("leading zero in a number") }
            if current == UInt8(ascii: ".") {
                index += 1
                guard digits(&self) > 0 else { throw error("invalid number") }
            }
            if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
                index += 1
                if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
                guard digits(&self) > 0 else { throw error("invalid number") }
            }
            let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
            guard let value = Double(text) else { throw error("invalid number") }
            return value
        }
    }
}
