import Foundation
import TonearmCore

/// The journal's record of a change, as JSON. An add is written by hand, byte for byte what
/// `JSONEncoder` (sorted keys) writes (a test holds it to that): adding a whole library is one
/// record of 10,000 entries, and the encoder's tree of boxed values cost a quarter of the add.
/// Every other change is small and goes through `JSONEncoder`.
extension StateJournal.Record {
    func encoded(with encoder: JSONEncoder) throws -> [UInt8] {
        guard case .queue(.add(let entries, let at)) = change else { return [UInt8](try encoder.encode(self)) }
        var json: [UInt8] = []
        json.reserveCapacity(64 + entries.count * 96)
        json.append(contentsOf: #"{"change":{"queue":{"edit":{"add":{"#.utf8)
        if let at { json.append(contentsOf: #""at":\#(at),"#.utf8) }
        json.append(contentsOf: #""entries":["#.utf8)
        for (index, entry) in entries.enumerated() {
            if index > 0 { json.append(UInt8(ascii: ",")) }
            json.append(UInt8(ascii: "{"))
            if let title = entry.title {
                json.append(contentsOf: #""title":"#.utf8)
                Self.appendString(title, to: &json)
                json.append(UInt8(ascii: ","))
            }
            json.append(contentsOf: #""url":"#.utf8)
            Self.appendString(entry.url.absoluteString, to: &json)
            json.append(UInt8(ascii: "}"))
        }
        json.append(contentsOf: #"]}}}},"sequence":\#(sequence)}"#.utf8)
        return json
    }

    /// A JSON string as `JSONEncoder` writes one: `"` and `\` escaped, `/` as `\/`, the control
    /// characters' short forms or `\u00XX`, the rest as its UTF-8.
    private static func appendString(_ text: String, to json: inout [UInt8]) {
        json.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): json.append(contentsOf: #"\""#.utf8)
            case UInt8(ascii: "\\"): json.append(contentsOf: #"\\"#.utf8)
            case UInt8(ascii: "/"): json.append(contentsOf: #"\/"#.utf8)
            case 0x08: json.append(contentsOf: #"\b"#.utf8)
            case 0x0C: json.append(contentsOf: #"\f"#.utf8)
            case 0x0A: json.append(contentsOf: #"\n"#.utf8)
            case 0x0D: json.append(contentsOf: #"\r"#.utf8)
            case 0x09: json.append(contentsOf: #"\t"#.utf8)
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                json.append(contentsOf: #"\u00"#.utf8)
                json.append(hex[Int(byte >> 4)])
                json.append(hex[Int(byte & 0xF)])
            default: json.append(byte)
            }
        }
        json.append(UInt8(ascii: "\""))
    }
}
