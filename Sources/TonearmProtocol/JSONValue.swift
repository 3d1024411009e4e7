import Foundation
import NIOCore

/// A JSON document as a Sendable value (read and written by `JSONCoding`).
package enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])
    /// A value already written by `JSONCoding.serialize`, copied to the wire as it is (an
    /// answer encoded once and sent many times: `StatusEncoding`). Never produced by parsing.
    case encoded(ByteBuffer)

    package subscript(key: String) -> JSONValue? {
        if case .object(let object) = self { return object[key] }
        return nil
    }

    package var stringValue: String? { if case .string(let s) = self { s } else { nil } }
    package var doubleValue: Double? { if case .number(let n) = self { n } else { nil } }
    package var boolValue: Bool? { if case .bool(let b) = self { b } else { nil } }

    package static func parse(_ data: Data) throws -> JSONValue {
        try data.withUnsafeBytes { bytes in try JSONCoding.parse(bytes) }
    }

    /// One line of compact JSON, keys sorted so output is stable.
    package func serialized() -> Data { Data(bytes) }

    /// The serialized bytes, with no trailing newline.
    package var bytes: [UInt8] {
        var output = ByteBuffer()
        JSONCoding.serialize(self, into: &output)
        return Array(output.readableBytesView)
    }

    package var text: String { String(decoding: bytes, as: UTF8.self) }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByBooleanLiteral, ExpressibleByFloatLiteral,
    ExpressibleByIntegerLiteral, ExpressibleByDictionaryLiteral, ExpressibleByArrayLiteral, ExpressibleByNilLiteral
{
    package init(stringLiteral value: String) { self = .string(value) }
    package init(booleanLiteral value: Bool) { self = .bool(value) }
    package init(floatLiteral value: Double) { self = .number(value) }
    package init(integerLiteral value: Int) { self = .number(Double(value)) }
    package init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { $1 }))
    }
    package init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    package init(nilLiteral: ()) { self = .null }
}

extension JSONValue {
    /// An object's member, or nil (also for a value that is not an object).
    package func member(_ key: String) -> JSONValue? {
        if case .object(let object) = self { return object[key] }
        return nil
    }

    package init(_ value: String?) { self = value.map(JSONValue.string) ?? .null }
    package init(_ value: Double?) { self = value.map(JSONValue.number) ?? .null }
    package init(_ value: Int?) { self = value.map { .number(Double($0)) } ?? .null }
}
