import Foundation
import NIOCore

/// A JSON document as a Sendable value (read and written by `JSONCoding`).
public enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])
    /// A value already written by `JSONCoding.serialize`, copied to the wire as it is (an
    /// answer encoded once and sent many times: `StatusEncoding`). Never produced by parsing.
    case encoded(ByteBuffer)

    public subscript(key: String) -> JSONValue? {
        if case .object(let object) = self { return object[key] }
        return nil
    }

    public var stringValue: String? { if case .string(let s) = self { s } else { nil } }
    public var doubleValue: Double? { if case .number(let n) = self { n } else { nil } }
    public var boolValue: Bool? { if case .bool(let b) = self { b } else { nil } }

    public static func parse(_ data: Data) throws -> JSONValue {
        try data.withUnsafeBytes { bytes in try JSONCoding.parse(bytes) }
    }

    /// One line of compact JSON, keys sorted so output is stable.
    public func serialized() -> Data { Data(bytes) }

    /// The serialized bytes, with no trailing newline.
    public var bytes: [UInt8] {
        var output = ByteBuffer()
        JSONCoding.serialize(self, into: &output)
        return Array(output.readableBytesView)
    }

    public var text: String { String(decoding: bytes, as: UTF8.self) }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByBooleanLiteral, ExpressibleByFloatLiteral,
    ExpressibleByIntegerLiteral, ExpressibleByDictionaryLiteral, ExpressibleByArrayLiteral, ExpressibleByNilLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(floatLiteral value: Double) { self = .number(value) }
    public init(integerLiteral value: Int) { self = .number(Double(value)) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { $1 }))
    }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(nilLiteral: ()) { self = .null }
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
