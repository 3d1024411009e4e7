import Foundation
import TonearmLibrary
import TonearmMedia

/// MPD's search arguments (src/command/DatabaseCommands.cxx, 0.23), parsed into the library's
/// `LibraryFilter`: legacy `TAG VALUE` pairs and filter expressions (`LibraryFilterSyntax`),
/// then `sort [-]TAG`, `window START:END` and `group TAG`, with MPD's messages for what is wrong.
struct MPDFilter {
    var filter: LibraryFilter
    var order: LibraryQuery.Order = .database
    var window: Range<Int>?
    var groups: [MediaTag] = []

    /// `arguments` from `first` on; `fold`: `search`'s case-insensitive matching (legacy pairs
    /// then test "contains"); `sorting`: `sort` and `window` may end them; `grouping`: `group`.
    /// `upTo`: the arguments end there (the caller took what follows); `filterOptional`: only
    /// `group` may follow the command's own arguments (`list`).
    init(
        _ call: MPDCall, from first: Int, fold: Bool, sorting: Bool = false, grouping: Bool = false,
        upTo end: Int? = nil, filterOptional: Bool = false
    ) throws(MPDError) {
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
                do { parts.append(try LibraryFilterSyntax.parse(argument, fold: fold)) } catch { throw .argument(error.message) }
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
        case "base": return .base(try argument { () throws(LibraryFilterSyntaxError) in try LibraryFilterSyntax.baseDirectory(value) })
        case "modified-since":
            return .modifiedSince(try argument { () throws(LibraryFilterSyntaxError) in try LibraryFilterSyntax.time(value) })
        case "added-since": return .addedSince(try argument { () throws(LibraryFilterSyntaxError) in try LibraryFilterSyntax.time(value) })
        case "audioformat": return .value(.audioFormat, value.contains("*") ? .matchesMask : .equals, value, foldCase: false)
        default:
            guard let tag = MediaTag.tag(named: name) else { throw .argument("Unknown filter type") }
            return .value(.tag(tag), fold ? .contains : .equals, value, foldCase: fold)
        }
    }

    /// A syntax error in MPD's words, as an argument error.
    private static func argument<T>(_ body: () throws(LibraryFilterSyntaxError) -> T) throws(MPDError) -> T {
        do { return try body() } catch { throw .argument(error.message) }
    }
}
