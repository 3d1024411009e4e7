import Foundation
import TonearmFrontEnd
import TonearmLibrary
import TonearmMedia
import TonearmPlayer
import TonearmProtocol
#if canImport(Glibc)
import Glibc
#endif

/// JSON-RPC's `library.*` methods: the music library's counts, listings, searches and scans.
/// Reads run off the event loop (the long replies' thread); a daemon without a library answers
/// `library_unavailable`.
extension RequestRouter {
    func libraryAnswer(_ request: RPC.Request, for peer: ClientPeer) async throws -> JSONValue {
        let params = Params(request.params, method: request.method)
        guard let library else {
            throw RPC.Failure(.rejected, "no music library: library.music_directory (or input.roots) names none",
                              data: ["kind": "library_unavailable"])
        }
        switch request.method {
        case "library.update":
            let (path, rescan) = (try params.string("path") ?? "", try params.bool("rescan") ?? false)
            do throws(LibraryUpdateRefusal) {
                return ["job": JSONValue(try library.update(path, rescan: rescan))]
            } catch {
                switch error {
                case .queueFull:
                    throw RPC.Failure(.rejected, "library.update: \(error); try again once one has run", data: ["kind": "update_queue_full"])
                case .badPath:
                    throw RPC.Failure(.invalidParams, "invalid params: 'path' must be a path inside the music directory: \(error)")
                }
            }
        case "library.stats":
            let stats = try await reading { try library.stats() }
            var answer: [String: JSONValue] = [
                "songs": JSONValue(stats.songs), "artists": JSONValue(stats.artists), "albums": JSONValue(stats.albums),
                "playtime": .number(stats.playtime), "updated": JSONValue(stats.updated),
            ]
            if let job = library.updatingJob { answer["updating"] = JSONValue(job) }
            if let offline = library.offline { answer["offline"] = .string(offline) }
            return .object(answer)
        case "library.browse":
            let path = try Self.libraryPath(try params.string("path") ?? "")
            guard let entries = try await reading({ try library.list(path) }) else {
                throw RPC.Failure(.rejected, "no such directory or song in the library: '\(path)'", data: ["kind": "not_found"])
            }
            var directories: [JSONValue] = [], songs: [JSONValue] = []
            for entry in entries {
                switch entry {
                case .directory(let uri, let modified): directories.append(["path": .string(uri), "modified": JSONValue(modified)])
                case .song(let song): songs.append(Self.json(song))
                }
            }
            return ["directories": .array(directories), "songs": .array(songs)]
        case "library.search":
            let query = try Self.libraryQuery(params)
            let (songs, measured) = try await reading {
                let songs = try library.songs(query)
                return (songs, try library.loudness(of: songs))
            }
            return ["songs": .array(songs.map { Self.json($0, loudness: measured[$0.uri]) })]
        case "library.list":
            let tag = try Self.tag(params.requiredString("tag"), "tag")
            let filter = try Self.filter(params)
            let groups = try (params.stringArray("group") ?? []).map { try Self.tag($0, "group") }
            let rows = try await reading { try library.distinct(tag, filter: filter, groups: groups) }
            let names = groups.map(\.name) + [tag.name]
            return ["values": .array(rows.map { row in .object(Dictionary(uniqueKeysWithValues: zip(names, row.map(JSONValue.string)))) })]
        case "library.art":
            let path = try Self.libraryPath(try params.requiredString("uri"), key: "uri")
            let (root, sources) = (library.root, self.sources)
            let art = try await reading { try LibraryArt.find(path, root: root, sources: sources, for: peer) }
            guard let art else {
                throw RPC.Failure(.rejected, "no cover for '\(path)': no cover file beside it, no picture in it", data: ["kind": "not_found"])
            }
            var answer: [String: JSONValue] = ["source": .string(art.source), "size": JSONValue(art.bytes.count),
                                               "data": .string(Data(art.bytes).base64EncodedString())]
            answer["type"] = art.type.map(JSONValue.string) ?? .null
            return .object(answer)
        default:
            throw RPC.Failure(.internalError, "internal error: '\(request.method)' is not a library method")
        }
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

    private static func tag(_ name: String, _ key: String) throws -> MediaTag {
        guard let tag = MediaTag.tag(named: name) else {
            throw RPC.Failure(.invalidParams, "invalid params: '\(key)' names no tag: '\(name)'",
                              data: ["tags": .array(MediaTag.allCases.map { .string($0.name) })])
        }
        return tag
    }

    /// `filter` (MPD's filter expression: exact, case-sensitive tests) and `query` (words any tag
    /// or the URI contains, letters' case folded), both when both are given.
    private static func filter(_ params: Params) throws -> LibraryFilter {
        var parts: [LibraryFilter] = []
        if let text = try params.string("filter") {
            do throws(LibraryFilterSyntaxError) { parts.append(try LibraryFilterSyntax.parse(text, fold: false)) } catch {
                throw RPC.Failure(.invalidParams, "invalid params: 'filter': \(error.message)")
            }
        }
        if let query = try params.string("query") {
            for word in query.split(whereSeparator: \.isWhitespace).map(String.init) {
                parts.append(.not(.and([.not(.value(.anyTag, .contains, word, foldCase: true)),
                                        .not(.value(.file, .contains, word, foldCase: true))])))
            }
        }
        return parts.count == 1 ? parts[0] : .and(parts)
    }

    private static func libraryQuery(_ params: Params) throws -> LibraryQuery {
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
