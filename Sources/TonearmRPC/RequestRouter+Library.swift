import Foundation
import TonearmFrontEnd
import TonearmLibrary
import TonearmMedia
import TonearmPlayer
import TonearmProtocol

#if canImport(Glibc)
    import Glibc
#endif

/// What JSON-RPC's `library.*` methods (`RPCMethods.library`) share: the library or its
/// absence, reads off the event loop (the long replies' thread), paths, tags, filters, songs.
extension RequestRouter {
    /// The library, or `library_unavailable` when the daemon has none.
    func requireLibrary() throws -> Library {
        guard let library else {
            throw RPC.Failure(
                .rejected, "no music library: library.music_directory (or input.roots) names none",
                data: ["kind": "library_unavailable"])
        }
        return library
    }

    /// A database read on the long replies' thread.
    func reading<T: Sendable>(_ read: @escaping @Sendable () throws -> T) async throws -> T {
        let outcome: Result<T, any Error> = await longReplies.encode { Result { try read() } }
        do { return try outcome.get() } catch let failure as RPC.Failure {
            throw failure  // a refusal the read itself made
        } catch {
            throw RPC.Failure(.internalError, "the library database: \(error)")
        }
    }

    /// A path relative to the music directory; "" or "/" is its root.
    static func libraryPath(_ text: String, key: String = "path") throws -> String {
        do throws(LibraryFilterSyntaxError) { return try LibraryFilterSyntax.baseDirectory(text) } catch {
            throw RPC.Failure(.invalidParams, "invalid params: '\(key)' must be relative to the music directory, without '..': '\(text)'")
        }
    }

    static func tag(_ name: String, _ key: String) throws -> MediaTag {
        guard let tag = MediaTag.tag(named: name) else {
            throw RPC.Failure(
                .invalidParams, "invalid params: '\(key)' names no tag: '\(name)'",
                data: ["tags": .array(MediaTag.allCases.map { .string($0.name) })])
        }
        return tag
    }

    /// `filter` (MPD's filter expression: exact, case-sensitive tests) and `query` (words any tag
    /// or the URI contains, letters' case folded), both when both are given.
    static func filter(_ params: Params) throws -> LibraryFilter {
        var parts: [LibraryFilter] = []
        if let text = try params.string("filter") {
            do throws(LibraryFilterSyntaxError) { parts.append(try LibraryFilterSyntax.parse(text, fold: false)) } catch {
                throw RPC.Failure(.invalidParams, "invalid params: 'filter': \(error.message)")
            }
        }
        if let query = try params.string("query") {
            for word in query.split(whereSeparator: \.isWhitespace).map(String.init) {
                parts.append(
                    .not(
                        .and([
                            .not(.value(.anyTag, .contains, word, foldCase: true)),
                            .not(.value(.file, .contains, word, foldCase: true)),
                        ])))
            }
        }
        return parts.count == 1 ? parts[0] : .and(parts)
    }

    static func libraryQuery(_ params: Params) throws -> LibraryQuery {
        let filter = try filter(params)
        var order = LibraryQuery.Order.database
        if var sort = try params.string("sort") {
            let descending = sort.hasPrefix("-")
            if descending { sort.removeFirst() }
            if sort == "modified" {
                order = .modified(descending: descending)
            } else {
                order = .tag(try tag(sort, "sort"), descending: descending)
            }
        }
        let offset = try params.integer("offset") ?? 0
        let limit = try params.integer("limit") ?? 1000
        guard offset >= 0, (1...100_000).contains(limit) else {
            throw RPC.Failure(.invalidParams, "invalid params: 'offset' must be 0 or more and 'limit' from 1 to 100000")
        }
        return LibraryQuery(filter: filter, order: order, window: offset..<offset + limit)
    }

    static func json(_ song: LibrarySong) -> JSONValue { json(song, loudness: nil) }

    /// A song, with its measured loudness when there is one.
    static func json(_ song: LibrarySong, loudness: LoudnessMeasurement?) -> JSONValue {
        var tags: [String: JSONValue] = [:]
        for entry in song.tags {
            if case .array(let values)? = tags[entry.tag.name] {
                tags[entry.tag.name] = .array(values + [.string(entry.value)])
            } else {
                tags[entry.tag.name] = .array([.string(entry.value)])
            }
        }
        var object: [String: JSONValue] = ["uri": .string(song.uri), "modified": JSONValue(song.modified), "tags": .object(tags)]
        if let duration = song.duration { object["duration"] = .number(duration) }
        if let format = song.format { object["format"] = .string(format) }
        if let loudness { object["loudness"] = ProtocolEncoding.loudness(loudness) }
        return .object(object)
    }
}
