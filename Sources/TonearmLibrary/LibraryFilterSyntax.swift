import Foundation
import TonearmMedia

/// A filter expression's syntax error, in MPD's words (the front-ends show them as they are).
package struct LibraryFilterSyntaxError: Error, Sendable, Equatable {
    package let message: String
    package init(_ message: String) { self.message = message }
}

/// MPD's filter expression language (src/song/Filter.cxx, 0.23, with 0.24's `starts_with` and
/// `added-since`), the textual form of a `LibraryFilter` that both front-ends take: MPD's
/// `find "(artist == 'x')"` and JSON-RPC's `library.search {filter}`.
package enum LibraryFilterSyntax {
    /// Parses one expression; `fold`: string tests fold letters' case (`search`).
    package static func parse(_ text: String, fold: Bool) throws(LibraryFilterSyntaxError) -> LibraryFilter {
        var parser = ExpressionParser(text, fold: fold)
        return try parser.parseWhole()
    }

    package static func baseDirectory(_ value: String) throws(LibraryFilterSyntaxError) -> String {
        let parts = value.split(separator: "/", omittingEmptySubsequences: true)
        guard !parts.contains(".."), !value.hasPrefix("/") || value == "/" else { throw LibraryFilterSyntaxError("Bad URI") }
        return parts.joined(separator: "/")
    }

    /// A time as MPD takes it: seconds since 1970, or ISO 8601 ("2024-01-31T12:00:00Z", a date).
    package static func time(_ text: String) throws(LibraryFilterSyntaxError) -> Int {
        if let seconds = Int(text) { return seconds }
        for format in ["yyyy-MM-dd'T'HH:mm:ssXXXXX", "yyyy-MM-dd'T'HH:mm:ss'Z'", "yyyy-MM-dd'T'HH:mm:ss", "yyyy-MM-dd"] {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "UTC")
            formatter.dateFormat = format
            if let date = formatter.date(from: text) { return Int(date.timeIntervalSince1970) }
        }
        throw LibraryFilterSyntaxError("Failed to parse time stamp")
    }

    /// One filter expression: `(TAG OP 'VALUE')`, `(!EXPR)`, `(EXPR AND EXPR …)`, `(base 'DIR')`,
    /// `(modified-since 'TIME')`, `(added-since 'TIME')`, `(file OP 'URI')`, `(AudioFormat == 'F')`,
    /// `(AudioFormat =~ 'MASK')`. OP: `==`, `!=`, `contains`, `starts_with`, `=~`, `!~`.
    package struct ExpressionParser {
        private let text: [Character]
        private var position = 0
        private let fold: Bool

        package init(_ text: String, fold: Bool) {
            self.text = Array(text)
            self.fold = fold
        }

        package mutating func parseWhole() throws(LibraryFilterSyntaxError) -> LibraryFilter {
            let filter = try expression()
            skipSpaces()
            guard position == text.count else { throw LibraryFilterSyntaxError("Unparsed garbage after expression") }
            return filter
        }

        private mutating func expression() throws(LibraryFilterSyntaxError) -> LibraryFilter {
            skipSpaces()
            guard take("(") else { throw LibraryFilterSyntaxError("'(' expected") }
            skipSpaces()
            if peek == "(" {
                var parts = [try expression()]
                skipSpaces()
                while takeWord("AND") {
                    parts.append(try expression())
                    skipSpaces()
                }
                guard take(")") else { throw LibraryFilterSyntaxError("')' expected") }
                return parts.count == 1 ? parts[0] : .and(parts)
            }
            if take("!") {
                let inner = try expression()
                skipSpaces()
                guard take(")") else { throw LibraryFilterSyntaxError("')' expected") }
                return .not(inner)
            }
            let name = word()
            guard !name.isEmpty else { throw LibraryFilterSyntaxError("Word expected") }
            skipSpaces()
            let filter: LibraryFilter
            switch name.lowercased() {
            case "base": filter = .base(try LibraryFilterSyntax.baseDirectory(try quoted()))
            case "modified-since": filter = .modifiedSince(try LibraryFilterSyntax.time(try quoted()))
            case "added-since": filter = .addedSince(try LibraryFilterSyntax.time(try quoted()))
            case "audioformat":
                let operation = try self.operation()
                let value = try quoted()
                switch operation {
                case .equals: filter = .value(.audioFormat, .equals, value, foldCase: false)
                case .matches: filter = .value(.audioFormat, .matchesMask, value, foldCase: false)
                default: throw LibraryFilterSyntaxError("Bad operator")
                }
            default:
                let subject: LibraryFilter.Subject
                switch name.lowercased() {
                case "any": subject = .anyTag
                case "file": subject = .file
                default:
                    guard let tag = MediaTag.tag(named: name) else { throw LibraryFilterSyntaxError("Unknown filter type: \(name)") }
                    subject = .tag(tag)
                }
                let operation = try self.operation()
                let value = try quoted()
                if operation == .matches || operation == .notMatches {
                    do { _ = try NSRegularExpression(pattern: value) } catch {
                        throw LibraryFilterSyntaxError("Error in regex: \((error as NSError).localizedDescription)")
                    }
                }
                filter = .value(subject, operation, value, foldCase: fold)
            }
            skipSpaces()
            guard take(")") else { throw LibraryFilterSyntaxError("')' expected") }
            return filter
        }

        private mutating func operation() throws(LibraryFilterSyntaxError) -> LibraryFilter.Operation {
            skipSpaces()
            let operations: [(String, LibraryFilter.Operation)] = [
                ("==", .equals), ("!=", .notEquals), ("=~", .matches), ("!~", .notMatches),
                ("contains", .contains), ("starts_with", .startsWith),
            ]
            for (spelling, operation) in operations where takeWord(spelling) { return operation }
            throw LibraryFilterSyntaxError("Unknown filter operator")
        }

        private mutating func quoted() throws(LibraryFilterSyntaxError) -> String {
            skipSpaces()
            guard let quote = peek, quote == "'" || quote == "\"" else { throw LibraryFilterSyntaxError("Quoted string expected") }
            position += 1
            var value = ""
            while position < text.count {
                let character = text[position]
                position += 1
                if character == "\\", position < text.count {
                    value.append(text[position])
                    position += 1
                } else if character == quote {
                    return value
                } else {
                    value.append(character)
                }
            }
            throw LibraryFilterSyntaxError("Closing quote not found")
        }

        private var peek: Character? { position < text.count ? text[position] : nil }

        private mutating func take(_ character: Character) -> Bool {
            guard peek == character else { return false }
            position += 1
            return true
        }

        /// Takes `spelling` when the text continues with it (then a space, a quote, or a paren).
        private mutating func takeWord(_ spelling: String) -> Bool {
            let characters = Array(spelling)
            guard position + characters.count <= text.count,
                Array(text[position..<position + characters.count]) == characters
            else { return false }
            position += characters.count
            skipSpaces()
            return true
        }

        private mutating func word() -> String {
            var word = ""
            while let character = peek, character.isLetter || character.isNumber || character == "_" || character == "-" {
                word.append(character)
                position += 1
            }
            return word
        }

        private mutating func skipSpaces() {
            while let character = peek, character == " " { position += 1 }
        }
    }
}
