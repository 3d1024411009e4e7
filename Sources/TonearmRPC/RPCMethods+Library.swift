import Foundation
import TonearmLibrary
import TonearmProtocol

/// The music library's counts, listings, searches, covers and scans. Reads run off the event
/// loop (`RequestRouter.reading`); a daemon without a library answers `library_unavailable`.
extension RPCMethods {
    static let library: [RPCMethod] = [
        RPCMethod(
            "library.stats", .read, [],
            .later { call in
                let library = try call.router.requireLibrary()
                let stats = try await call.router.reading { try library.stats() }
                var answer: [String: JSONValue] = [
                    "songs": JSONValue(stats.songs), "artists": JSONValue(stats.artists), "albums": JSONValue(stats.albums),
                    "playtime": .number(stats.playtime), "updated": JSONValue(stats.updated),
                ]
                if let job = library.updatingJob { answer["updating"] = JSONValue(job) }
                if let offline = library.offline { answer["offline"] = .string(offline) }
                return .object(answer)
            }),
        RPCMethod(
            "library.update", .control, ["path", "rescan"],
            .later { call in
                let library = try call.router.requireLibrary()
                let (path, rescan) = (try call.params.string("path") ?? "", try call.params.bool("rescan") ?? false)
                do throws(LibraryUpdateRefusal) {
                    return ["job": JSONValue(try library.update(path, rescan: rescan))]
                } catch {
                    switch error {
                    case .queueFull:
                        throw RPC.Failure(
                            .rejected, "library.update: \(error); try again once one has run", data: ["kind": "update_queue_full"])
                    case .badPath:
                        throw RPC.Failure(.invalidParams, "invalid params: 'path' must be a path inside the music directory: \(error)")
                    }
                }
            }),
        RPCMethod(
            "library.browse", .read, ["path"],
            .later { call in
                let library = try call.router.requireLibrary()
                let path = try RequestRouter.libraryPath(try call.params.string("path") ?? "")
                guard let entries = try await call.router.reading({ try library.list(path) }) else {
                    throw RPC.Failure(.rejected, "no such directory or song in the library: '\(path)'", data: ["kind": "not_found"])
                }
                var directories: [JSONValue] = []
                var songs: [JSONValue] = []
                for entry in entries {
                    switch entry {
                    case .directory(let uri, let modified): directories.append(["path": .string(uri), "modified": JSONValue(modified)])
                    case .song(let song): songs.append(RequestRouter.json(song))
                    }
                }
                return ["directories": .array(directories), "songs": .array(songs)]
            }),
        RPCMethod(
            "library.search", .read, ["query", "filter", "sort", "offset", "limit"],
            .later { call in
                let library = try call.router.requireLibrary()
                let query = try RequestRouter.libraryQuery(call.params)
                let (songs, measured) = try await call.router.reading {
                    let songs = try library.songs(query)
                    return (songs, try library.loudness(of: songs))
                }
                return ["songs": .array(songs.map { RequestRouter.json($0, loudness: measured[$0.uri]) })]
            }),
        RPCMethod(
            "library.list", .read, ["tag", "filter", "query", "group"],
            .later { call in
                let library = try call.router.requireLibrary()
                let tag = try RequestRouter.tag(call.params.requiredString("tag"), "tag")
                let filter = try RequestRouter.filter(call.params)
                let groups = try (call.params.stringArray("group") ?? []).map { try RequestRouter.tag($0, "group") }
                let rows = try await call.router.reading { try library.distinct(tag, filter: filter, groups: groups) }
                let names = groups.map(\.name) + [tag.name]
                return [
                    "values": .array(rows.map { row in .object(Dictionary(uniqueKeysWithValues: zip(names, row.map(JSONValue.string)))) })
                ]
            }),
        RPCMethod(
            "library.art", .read, ["uri"],
            .later { call in
                let library = try call.router.requireLibrary()
                let path = try RequestRouter.libraryPath(try call.params.requiredString("uri"), key: "uri")
                let (root, sources, peer) = (library.root, call.router.sources, call.session.peer)
                let art = try await call.router.reading { try LibraryArt.find(path, root: root, sources: sources, for: peer) }
                guard let art else {
                    throw RPC.Failure(
                        .rejected, "no cover for '\(path)': no cover file beside it, no picture in it", data: ["kind": "not_found"])
                }
                var answer: [String: JSONValue] = [
                    "source": .string(art.source), "size": JSONValue(art.bytes.count),
                    "data": .string(Data(art.bytes).base64EncodedString()),
                ]
                answer["type"] = art.type.map(JSONValue.string) ?? .null
                return .object(answer)
            }),
    ]
}
