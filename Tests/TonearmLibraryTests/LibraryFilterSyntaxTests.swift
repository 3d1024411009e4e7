import Testing
import TonearmMedia

@testable import TonearmLibrary

/// MPD's filter expressions (src/song/Filter.cxx), parsed into the library's filter values; the
/// daemon tests hold what they match to Debian's MPD.
@Suite("Filter expressions parse as MPD 0.23 reads them", .timeLimit(.minutes(1)))
struct LibraryFilterSyntaxTests {
    struct Row: Sendable, CustomTestStringConvertible {
        let text: String
        var fold = false
        let parsed: LibraryFilter?
        /// The message when `parsed` is nil.
        var error: String?
        var testDescription: String { text }
    }

    /// Made inside the test, not kept in a static: a filter's indirect boxes are referenced through
    /// tagged pointers, which LeakSanitizer cannot follow from a global at exit.
    static func rows() -> [Row] {
        [
            Row(text: "(artist == 'A')", parsed: .value(.tag(.artist), .equals, "A", foldCase: false)),
            Row(text: "(Artist == \"A \\\"B\\\"\")", parsed: .value(.tag(.artist), .equals, "A \"B\"", foldCase: false)),
            Row(text: "(artist != 'A')", parsed: .value(.tag(.artist), .notEquals, "A", foldCase: false)),
            Row(text: "(title contains 'x')", fold: true, parsed: .value(.tag(.title), .contains, "x", foldCase: true)),
            Row(text: "(title starts_with 'x')", parsed: .value(.tag(.title), .startsWith, "x", foldCase: false)),
            Row(text: "(title =~ '^a.*')", parsed: .value(.tag(.title), .matches, "^a.*", foldCase: false)),
            Row(text: "(title !~ 'a')", parsed: .value(.tag(.title), .notMatches, "a", foldCase: false)),
            Row(text: "(any == 'x')", parsed: .value(.anyTag, .equals, "x", foldCase: false)),
            Row(text: "(file == 'a/b.flac')", parsed: .value(.file, .equals, "a/b.flac", foldCase: false)),
            Row(text: "(base 'a/b')", parsed: .base("a/b")),
            Row(text: "(base '/')", parsed: .base("")),
            Row(text: "(modified-since '1700000000')", parsed: .modifiedSince(1_700_000_000)),
            Row(text: "(modified-since '2023-11-14T22:13:20Z')", parsed: .modifiedSince(1_700_000_000)),
            Row(text: "(added-since '2023-11-14')", parsed: .addedSince(1_699_920_000)),
            Row(text: "(AudioFormat == '44100:16:2')", parsed: .value(.audioFormat, .equals, "44100:16:2", foldCase: false)),
            Row(text: "(AudioFormat =~ '44100:*:2')", parsed: .value(.audioFormat, .matchesMask, "44100:*:2", foldCase: false)),
            Row(text: "(!(artist == 'A'))", parsed: .not(.value(.tag(.artist), .equals, "A", foldCase: false))),
            Row(
                text: "((artist == 'A') AND (album == 'B') AND (!(genre == '')))",
                parsed: .and([
                    .value(.tag(.artist), .equals, "A", foldCase: false), .value(.tag(.album), .equals, "B", foldCase: false),
                    .not(.value(.tag(.genre), .equals, "", foldCase: false)),
                ])),
            Row(text: "artist == 'A'", parsed: nil, error: "'(' expected"),
            Row(text: "(artist == 'A'", parsed: nil, error: "')' expected"),
            Row(text: "(artist == A)", parsed: nil, error: "Quoted string expected"),
            Row(text: "(artist is 'A')", parsed: nil, error: "Unknown filter operator"),
            Row(text: "(nosuch == 'A')", parsed: nil, error: "Unknown filter type: nosuch"),
            Row(text: "(artist == 'A) ", parsed: nil, error: "Closing quote not found"),
            Row(text: "(AudioFormat != 'x')", parsed: nil, error: "Bad operator"),
            Row(text: "(base '../x')", parsed: nil, error: "Bad URI"),
            Row(text: "(modified-since 'yesterday')", parsed: nil, error: "Failed to parse time stamp"),
            Row(text: "(artist == 'A') x", parsed: nil, error: "Unparsed garbage after expression"),
            Row(text: "()", parsed: nil, error: "Word expected"),
        ]
    }

    @Test func everyRowParsesAsItSays() {
        for row in Self.rows() {
            do {
                let filter = try LibraryFilterSyntax.parse(row.text, fold: row.fold)
                #expect(filter == row.parsed, "\(row.text): \(filter)")
            } catch {
                #expect(row.parsed == nil, "\(row.text): \(error.message)")
                #expect(error.message == row.error, "\(row.text)")
            }
        }
    }
}
