import TonearmLibrary
import TonearmProtocol

/// The stored playlists MPD clients keep too (`library.playlist_directory`): listed, loaded
/// into the queue, saved from it and deleted. The store's files are read and written off the
/// event loop.
extension RPCMethods {
    static let playlists: [RPCMethod] = [
        RPCMethod(
            "playlist.list", .read, [],
            .later { call in
                let playlists = try call.router.requirePlaylists()
                let list = try await call.router.reading { playlists.list() }
                return ["playlists": .array(list.map { ["name": .string($0.name), "modified": JSONValue($0.modified)] })]
            }),
        RPCMethod(
            "playlist.load", .control, ["name", "position", "play"],
            .later { call in
                let (router, playlists) = (call.router, try call.router.requirePlaylists())
                let name = try call.params.requiredString("name")
                let entries = try await router.reading {
                    try RequestRouter.stored { () throws(PlaylistStore.Failure) in try playlists.entries(name) }
                }
                // As MPD's `load`: an entry that names nothing this daemon may play is left out (and counted).
                let playable = entries.filter { text in (try? router.sources.check(router.sourceURL(text))) != nil }
                guard !playable.isEmpty else {
                    return ["items": [], "version": JSONValue(call.player.queue.version), "skipped": JSONValue(entries.count)]
                }
                var object: [String: JSONValue] = ["urls": .array(playable.map(JSONValue.string))]
                if let position = call.request.params.member("position") { object["position"] = position }
                if let play = call.request.params.member("play") { object["play"] = play }
                guard case .object(var answer) = try await router.addAndPlay(Params(.object(object), method: "add"), session: call.session)
                else {
                    throw RPC.Failure(.internalError, "internal error: add answered no object")
                }
                answer["skipped"] = JSONValue(entries.count - playable.count)
                return .object(answer)
            }),
        RPCMethod(
            "playlist.save", .control, ["name", "replace"],
            .later { call in
                let playlists = try call.router.requirePlaylists()
                let name = try call.params.requiredString("name")
                let replace = try call.params.bool("replace") ?? false
                let entries = call.player.queue.items.map { item in call.router.storedEntry(item.url) }
                try await call.router.reading {
                    try RequestRouter.stored { () throws(PlaylistStore.Failure) in
                        if replace {
                            try playlists.edit(name, creating: true) { $0 = entries }
                        } else {
                            try playlists.create(name, entries: entries)
                        }
                    }
                }
                return ["name": .string(name), "entries": JSONValue(entries.count)]
            }),
        RPCMethod(
            "playlist.delete", .control, ["name"],
            .later { call in
                let playlists = try call.router.requirePlaylists()
                let name = try call.params.requiredString("name")
                try await call.router.reading {
                    try RequestRouter.stored { () throws(PlaylistStore.Failure) in try playlists.remove(name) }
                }
                return ["name": .string(name)]
            }),
    ]
}
