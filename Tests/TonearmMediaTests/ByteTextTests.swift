import Testing
import TonearmMedia

@Suite("Texts told apart by their bytes")
struct ByteTextTests {
    /// "é" precomposed and "e" with a combining accent: equal `String`s, two `ByteText`s (two
    /// values for MPD and SQLite); the same bytes, however made, one.
    @Test func canonicallyEquivalentTextsAreTwoKeys() {
        let composed = "Caf\u{E9}"
        let decomposed = "Cafe\u{301}"
        #expect(composed == decomposed)
        #expect(ByteText(composed) != ByteText(decomposed))
        #expect(
            Set([ByteText(composed), ByteText(decomposed), ByteText(String(composed.utf8.map { Character(UnicodeScalar($0)) }))]).count == 3
        )
        let rebuilt = String(decoding: Array(composed.utf8), as: UTF8.self)
        #expect(ByteText(composed) == ByteText(rebuilt) && ByteText(composed).hashValue == ByteText(rebuilt).hashValue)
        #expect(!"ab".hasSameBytes(as: "abc") && "".hasSameBytes(as: "") && !"a".hasSameBytes(as: "b"))
    }
}
