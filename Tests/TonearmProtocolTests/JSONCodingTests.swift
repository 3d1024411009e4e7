import Foundation
import NIOCore
import Testing

@testable import TonearmProtocol

@Suite("JSON reader and writer", .timeLimit(.minutes(1)))
struct JSONCodingTests {
    private func parse(_ text: String) throws -> JSONValue { try JSONValue.parse(Data(text.utf8)) }

    @Test func readsEveryKindOfValue() throws {
        let value = try parse(#" {"a": [1, -2.5, 3e2, true, false, null], "b": {"c": "d"}, "e": ""} "#)
        #expect(value == ["a": [1, -2.5, 300, true, false, nil], "b": ["c": "d"], "e": ""])
    }

    @Test func escapesAndUnicodeRoundTrip() throws {
        let text = "quote \" backslash \\ slash / newline \n tab \t bell \u{07} é 🎵"
        let encoded = JSONValue.string(text).text
        #expect(!encoded.contains("\n") && encoded.contains(#"\u0007"#))
        #expect(try parse(encoded) == .string(text))
        #expect(try parse(#""\u00e9\ud83c\udfb5\/""#) == .string("é🎵/"))
        // Foundation's reader agrees with what we write.
        let foundation = try JSONSerialization.jsonObject(with: Data(encoded.utf8), options: .fragmentsAllowed) as? String
        #expect(foundation == text)
    }

    @Test func writesSortedKeysAndIntegralNumbersAsIntegers() {
        #expect(
            JSONValue.object(["b": 1, "a": 2.5, "c": .number(1e20), "d": .number(.nan)]).text == #"{"a":2.5,"b":1,"c":1e+20,"d":null}"#)
    }

    @Test func writesIntegersDigitByDigit() {
        let numbers: [Double] = [0, -0.0, 7, -7, 10, 100, 1_234_567_890, -987_654_321, 8.9e15, -8.9e15, 9e15, 0.1, -2.5]
        #expect(
            JSONValue.array(numbers.map(JSONValue.number)).text
                == "[0,0,7,-7,10,100,1234567890,-987654321,8900000000000000,-8900000000000000,9000000000000000.0,0.1,-2.5]")
        #expect(JSONValue.object(["z": ["y": [1, "two", nil, true]], "a": "b"]).text == #"{"a":"b","z":{"y":[1,"two",null,true]}}"#)
    }

    @Test(arguments: [
        "", "{", "[1,]", "{\"a\" 1}", "01", "1.", "-", "tru", "\"abc", "\"\\x\"", "\"\\ud800\"",
        "{\"a\":1} x", "[1 2]", "\"a\u{01}b\"", "{1:2}", "NaN", "+1",
    ])
    func refusesInvalidJSON(_ text: String) {
        #expect(throws: (any Error).self, "\(text.debugDescription)") { try parse(text) }
    }

    @Test func encodedValuesAreCopiedAsWritten() {
        let inner: JSONValue = ["b": [1, "two"], "a": nil]
        var bytes = ByteBuffer()
        JSONCoding.serialize(inner, into: &bytes)
        #expect(JSONValue.object(["x": .encoded(bytes), "w": 1]).text == JSONValue.object(["x": inner, "w": 1]).text)
    }

    @Test func aResultLineIsTheResponseLine() {
        for id: JSONValue in [1, "req-7", nil, 2.5] {
            for result: JSONValue in ["pong", ["state": ["state": "idle"], "volume": 80], [1, 2], nil] {
                let line = RPCFraming.resultLine(id: id, result: result)
                #expect(line == RPCFraming.line(RPC.response(id: id, result: result)), "\(id) \(result)")
            }
        }
    }

    @Test func refusesInvalidUTF8() {
        #expect(throws: (any Error).self) { try JSONValue.parse(Data([0x22, 0xC3, 0x28, 0x22])) }
    }

    @Test func limitsNesting() throws {
        let fine = String(repeating: "[", count: 60) + String(repeating: "]", count: 60)
        #expect(throws: Never.self) { try parse(fine) }
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(throws: (any Error).self) { try parse(deep) }
    }
}
