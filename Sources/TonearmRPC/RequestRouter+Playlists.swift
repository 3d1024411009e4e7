import Foundation
import TonearmFrontEnd
import TonearmLibrary
import TonearmPlayer
import TonearmProtocol

/// JSON-RPC's `playlist.*` methods: the stored playlists MPD clients keep too
/// (`library.playlist_directory`), listed, loaded into the queue, saved from it and deleted.
/// The store's files are read and written off the event loop.
extension RequestRouter {
    func playlistAnswer(_ request: RPC.Request, session: ClientSession) async throws -> JSONValue {
        let params = Params(request.params, method: request.method)
        guard let playlists else {
            throw RPC.Failure(.rejected, "no stored playlists here", data: ["kind": "playlists_unavailable"])
        }
        switch request.method {
        case "playlist.list":
            let list = try await reading { playlists.list() }
            return ["playlists": .array(list.map { ["name": .string($0.name), "modified": JSONValue($0.modified)] })]
        case "playlist.load":
            let name = try params.requiredString("name")
            let entries = try await reading { try Self.stored { () throws(PlaylistStore.Failure) in try playlists.entries(name) } }
            // As MPD's `load`: an entry that names nothing this daemon may play is left out (and counted).
            let playable = entries.filter { text in (try? sources.check(sourceURL(text))) != nil }
            guard !playable.isEmpty else {
                return ["items": [], "version": JSONValue(player.queue.version), "skipped": JSONValue(entries.count)]
            }
            var object: [String: JSONValue] = ["urls": .array(playable.map(JSONValue.string))]
            if let position = request.params.member("position") { object["position"] = position }
            if let play = request.params.member("play") { object["play"] = play }
            guard case .object(var answer) = try await addAndPlay(Params(.object(object), method: "add"), session: session) else {
                throw RPC.Failure(.internalError, "internal error: add answered no object")
            }
            answer["skipped"] = JSONValue(entries.count - playable.count)
            return .object(answer)
        case "playlist.save":
            let name = try params.requiredString("name")
            let replace = try params.bool("replace") ?? false
            let entries = player.queue.items.map { item in storedEntry(item.url) }
            try await reading {
                try Self.stored { () throws(PlaylistStore.Failure) in
                    if replace {
                        try playlists.edit(name, creating: true) { $0 = entries }
                    } else {
                        try playlists.create(name, entries: entries)
                    }
                }
            }
            return ["name": .string(name), "entries": JSONValue(entries.count)]
        case "playlist.delete":
            let name = try params.requiredString("name")
            try await reading { try Self.stored { () throws(PlaylistStore.Failure) in try playlists.remove(name) } }
            return ["name": .string(name)]
        default:
            throw RPC.Failure(.internalError, "internal error: '\(request.method)' is not a playlist method")
        }
    }

    /// How a queue item is written in a stored playlist: its path in the music directory when it
    /// is there (as MPD writes it), else its absolute path or URL.
    private func storedEntry(_ url: URL) -> String {
        if let root = library?.root, url.isFileURL, url.path.hasPrefix(root + "/") { return String(url.path.dropFirst(root.count + 1)) }
        return url.isFileURL ? url.path : url.absoluteString
    }

    /// The store's failures in JSON-RPC's words.
    private static func stored<T>(_ body: () throws(PlaylistStore.Failure) -> T) throws -> T {
        do throws(PlaylistStore.Failure) { return try body() } catch {
            switch error {
            case .badName: throw RPC.Failure(.invalidParams, "invalid params: 'name': \(error) (not empty, no '/', no line break)")
            case .noSuchPlaylist: throw RPC.Failure(.rejected, "\(error)", data: ["kind": "not_found"])
            case .exists: throw RPC.Failure(.rejected, "\(error) (give replace: true to replace it)", data: ["kind": "exists"])
            default: throw RPC.Failure(.rejected, "\(error)", data: ["kind": "playlist_failed"])
            }
        }
    }
}
