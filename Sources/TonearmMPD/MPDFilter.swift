import Foundation
import TonearmLibrary
import TonearmMedia

/// MPD's search arguments (src/song/Filter.cxx, src/command/DatabaseCommands.cxx, 0.23), parsed
/// into the library's `LibraryFilter`: legacy `TAG VALUE` pairs and filter expressions, then
/// `sort [-]TAG`, `window START:END` and `group TAG`, with MPD's messages for what is wrong.
struct MPDFilter {
    var filter: LibraryFilter
    var order: LibraryQuery.Order = .database
    var window: Range<Int>?
    var groups: [MediaTag] = []

    /// `arguments` from `first` on; `fold`: `search`'s case-insensitive matching (legacy pairs
    /// then test "contains"); `sorting`: `sort` and `window` may end them; `grouping`: `group`.
    /// `upTo`: the arguments end there (the caller took what follows); `filterOptional`: only
    /// `group` may follow the command's own arguments (`list`).
    init(_ call: MPDCall, from first: Int, fold: Bool, sorting: Bool = false, grouping: Bool = false,
         upTo end: Int? = nil, filterOptional: Bool = false) throws(MPDError) {
        var last = end ?? call.count
        if grouping {
            while last - first >= 2, call[last - 2].lowercased() == "group" {
                guard let tag = MediaTag.tag(named: call[last - 1]) else { throw .argument("Unknown tag type: \(call[last - 1])") }
                groups.insert(tag, at: 0)
                last -= 2
            }
        }
        if sorting, last - first >= 2, call[last - 2] == "window" {
            window = try call.range(last - 1)
            last -= 2
        }
        if sorting, last - first >= 2, call[last - 2] == "sort" {
            var name = Substring(call[last - 1])
            let descending = name.hasPrefix("-")
            if descending { name = name.dropFirst() }
            if name.caseInsensitiveCompare("Last-Modified") == .orderedSame {
                order = .modified(descending: descending)
            } else if let tag = MediaTag.tag(named: String(name)) {
                order = .tag(tag, descending: descending)
            } else {
                throw .argument("Unknown sort tag")
            }
            last -= 2
        }
        guard last > first || filterOptional else { throw .argument("too few arguments") }
        var parts: [LibraryFilter] = []
        var index = first
        while index < last {
            let argument = call[index]
            if argument.hasPrefix("(") {
                var parser = ExpressionParser(argument, fold: fold)
                parts.append(try parser.parseWhole())
                index += 1
                continue
            }
            guard index + 1 < last else { throw .argument("Incorrect number of filter arguments") }
            parts.append(try Self.pair(argument, call[index + 1], fold: fold))
            index += 2
        }
        filter = parts.count == 1 ? parts[0] : .and(parts)
    }

    /// A legacy `TAG VALUE` pair: `find` tests equality, `search` case-folded containment.
    private static func pair(_ name: String, _ value: String, fold: Bool) throws(MPDError) -> LibraryFilter {
        switch name.lowercased() {
        case "any": return .value(.anyTag, fold ? .contains : .equals, value, foldCase: fold)
        case "file", "filename": return .value(.file, fold ? .contains : .equals, value, foldCase: fold)
        case "base": return .base(try baseDirectory(value))
        case "modified-since": return .modifiedSince(try time(value))
        case "added-since": return .addedSince(try time(value))
        case "audioformat": return .value(.audioFormat, value.contains("*") ? .matchesMask : .equals, value, foldCase: false)
        default:
            guard let tag = MediaTag.tag(named: name) else { throw .argument("Unknown filter type") }
            return .value(.tag(tag), fold ? .contains : .equals, value, foldCase: fold)
        }
    }

    static func baseDirectory(_ value: String) throws(MPDError) -> String {
        let parts = value.split(separator: "/", omittingEmptySubsequences: true)
        guard !parts.contains(".."), !value.hasPrefix("/") || value == "/" else { throw .argument("Bad URI") }
        return parts.joined(separator: "/")
    }

    /// A time as MPD takes it: seconds since 1970, or ISO 8601 ("2024-01-31T12:00:00Z", a date).
    static func time(_ text: String) throws(MPDError) -> Int {
        if let seconds = Int(text) { return seconds }
        for format in ["yyyy-MM-dd'T'HH:mm:ssXXXXX", "yyyy-MM-dd'T'HH:mm:ss'Z'", "yyyy-MM-dd'T'HH:mm:ss", "yyyy-MM-dd"] {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: "UTC")
            formatter.dateFormat = format
            if let date = formatter.date(from: text) { return Int(date.timeIntervalSince1970) }
        }
        throw .argument("Failed to parse time stamp")
    }

    /// One filter expression: `(TAG OP 'VALUE')`, `(!EXPR)`, `(EXPR AND EXPR …)`, `(base 'DIR')`,
    /// `(modified-since 'TIME')`, `(added-since 'TIME')`, `(file OP 'URI')`, `(AudioFormat == 'F')`,
    /// `(AudioFormat =~ 'MASK')`. OP: `==`, `!=`, `contains`, `starts_with`, `=~`, `!~`.
    struct ExpressionParser {
        private let text: [Character]
        private var position = 0
        private let fold: Bool

        init(_ text: String, fold: Bool) {
            self.text = Array(text)
            self.fold = fold
        }

        mutating func parseWhole() throws(MPDError) -> LibraryFilter {
            let filter = try expression()
            skipSpaces()
            guard position == text.count else { throw .argument("Unparsed garbage after expression") }
            return filter
        }

        private mutating func expression() throws(MPDError) -> LibraryFilter {
            skipSpaces()
            guard take("(") else { throw .argument("'(' expected") }
            skipSpaces()
            if peek == "(" {
                var parts = [try expression()]
                skipSpaces()
                while takeWord("AND") {
                    parts.append(try expression())
                    skipSpaces()
                }
                guard take(")") else { throw .argument("')' expected") }
                return parts.count == 1 ? parts[0] : .and(parts)
            }
            if take("!") {
                let inner = try expression()
                skipSpaces()
                guard take(")") else { throw .argument("')' expected") }
                return .not(inner)
            }
            let name = word()
            guard !name.isEmpty else { throw .argument("Word expected") }
            skipSpaces()
            let filter: LibraryFilter
            switch name.lowercased() {
            case "base": filter = .base(try MPDFilter.baseDirectory(try quoted()))
            case "modified-since": filter = .modifiedSince(try MPDFilter.time(try quoted()))
            case "added-since": filter = .addedSince(try MPDFilter.time(try quoted()))
            case "audioformat":
                let operation = try self.operation()
                let value = try quoted()
                switch operation {
                case .equals: filter = .value(.audioFormat, .equals, value, foldCase: false)
                case .matches: filter = .value(.audioFormat, .matchesMask, value, foldCase: false)
                default: throw .argument("Bad operator")
                }
            default:
                let subject: LibraryFilter.Subject
                switch name.lowercased() {
                case "any": subject = .anyTag
                case "file": subject = .file
                default:
                    guard let tag = MediaTag.tag(named: name) else { throw .argument("Unknown filter type: \(name)") }
                    subject = .tag(tag)
                }
                let operation = try self.operation()
                let value = try quoted()
                if operation == .matches || operation == .notMatches {
                    do { _ = try NSRegularExpression(pattern: value) } catch {
                        throw .argument("Error in regex: \((error as NSError).localizedDescription)")
                    }
                }
                filter = .value(subject, operation, value, foldCase: fold)
            }
            skipSpaces()
            guard take(")") else { throw .argument("')' expected") }
            return filter
        }

        private mutating func operation() throws(MPDError) -> LibraryFilter.Operation {
            skipSpaces()
            let operations: [(String, LibraryFilter.Operation)] = [
                ("==", .equals), ("!=", .notEquals), ("=~", .matches), ("!~", .notMatches),
                ("contains", .contains), ("starts_with", .startsWith),
            ]
            for (spelling, operation) in operations where takeWord(spelling) { return operation }
            throw .argument("Unknown filter operator")
        }

        private mutating func quoted() throws(MPDError) -> String {
            skipSpaces()
            guard let quote = peek, quote == "'" || quote == "\"" else { throw .argument("Quoted string expected") }
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
            throw .argument("Closing quote not found")
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
                  Array(text[position..<position + characters.count]) == characters else { return false }
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
