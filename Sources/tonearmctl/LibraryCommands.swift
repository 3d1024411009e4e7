import ArgumentParser
import Foundation
import TonearmProtocol

// The music library: searching, browsing and scanning it.

struct Search: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Search the library: songs with every word in some tag or their path (case folded).")
    @OptionGroup var options: ConnectionOptions
    @Argument(help: "Words to look for.") var words: [String] = []
    @Option(help: "An MPD filter expression, e.g. \"(artist == 'Nina Simone')\" (exact tests).") var filter: String?
    @Option(help: "Sort by a tag, or by 'modified'; a leading - sorts descending.") var sort: String?
    @Option(help: "At most this many songs (1–100000).", transform: NumberArgument.index) var limit: Int = 100

    func validate() throws {
        if words.isEmpty && filter == nil { throw ValidationError("give words to look for, or --filter") }
    }

    func run() async throws {
        var params: [String: JSONValue] = ["limit": .number(Double(limit))]
        if !words.isEmpty { params["query"] = .string(words.joined(separator: " ")) }
        if let filter { params["filter"] = .string(filter) }
        if let sort { params["sort"] = .string(sort) }
        try await options.run("library.search", .object(params)) { result in
            guard case .array(let songs)? = result["songs"] else { return result.text }
            if songs.isEmpty { return "(no song found)" }
            return songs.map(Self.line).joined(separator: "\n")
        }
    }

    /// "uri  Artist – Title  m:ss".
    static func line(_ song: JSONValue) -> String {
        func first(_ tag: String) -> JSONValue {
            if case .array(let values)? = song["tags"]?[tag], let value = values.first { return value }
            return .null
        }
        let item: JSONValue = ["title": first("Title"), "artist": first("Artist"), "url": song["uri"] ?? .null]
        return "\(song["uri"]?.stringValue ?? "")  \(Queue.title(item))  \(Queue.clock(song["duration"]?.doubleValue))"
    }
}

struct Ls: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List a directory of the library: its directories (ending in /), then its songs.")
    @OptionGroup var options: ConnectionOptions
    @Argument(help: "A path relative to the music directory (default: its root).") var path: String = ""

    func run() async throws {
        try await options.run("library.browse", ["path": .string(path)]) { result in
            var lines: [String] = []
            if case .array(let directories)? = result["directories"] {
                lines += directories.map { ($0["path"]?.stringValue ?? "") + "/" }
            }
            if case .array(let songs)? = result["songs"] { lines += songs.map(Search.line) }
            return lines.isEmpty ? "(empty)" : lines.joined(separator: "\n")
        }
    }
}

struct Update: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Scan the music directory (or a path in it) for changes.")
    @OptionGroup var options: ConnectionOptions
    @Argument(help: "A path relative to the music directory (default: all of it).") var path: String = ""
    @Flag(help: "Read unchanged files again too.") var rescan = false

    func run() async throws {
        try await options.run("library.update", ["path": .string(path), "rescan": .bool(rescan)]) { result in
            "scan job \(Summary.whole(result["job"])) started"
        }
    }
}
