import TonearmCore
import TonearmFrontEnd
import TonearmPlayer
import TonearmProtocol

/// One JSON-RPC method, as `MPDCommand` is one MPD command: its name, who may call it, the params
/// it takes, and whether it answers at once (on the connection's event loop) or later (from a
/// task, once the engine has acted). The bodies are `RequestRouter`'s.
struct RPCMethod: Sendable {
    enum Access: Sendable { case read, control }

    enum Timing: Sendable {
        case now
        case later
        /// Later when the request asks the engine to start something, else now.
        case laterWhen(@Sendable (RPC.Request, Player) -> Bool)
    }

    let name: String
    let access: Access
    /// The params it takes; any other is `invalidParams`, naming it.
    let params: Set<String>
    let timing: Timing

    init(_ name: String, _ access: Access, _ params: [String], _ timing: Timing) {
        self.name = name
        self.access = access
        self.params = Set(params)
        self.timing = timing
    }

    func answersLater(_ request: RPC.Request, _ player: Player) -> Bool {
        switch timing {
        case .now: false
        case .later: true
        case .laterWhen(let test): test(request, player)
        }
    }
}

/// Every JSON-RPC method, in the order docs/protocol.md lists them.
enum RPCMethods {
    static let all: [RPCMethod] = [
        RPCMethod("load", .control, ["url", "play", "start"], .later),
        // Later also to read a playlist file or the library, which is disk work for no event loop.
        RPCMethod("add", .control, ["urls", "position", "play"], .laterWhen { request, _ in
            if request.params.member("play") == .bool(true) { return true }
            guard case .array(let urls)? = request.params.member("urls") else { return false }
            // Later too for a song named by its library path: its tags are read from the library.
            return urls.contains {
                if case .string(let text) = $0 { PlaylistFile.kind(forPath: text) != nil || RequestRouter.isLibraryPath(text) } else { false }
            }
        }),
        // Later for a long queue, to encode it off the event loop (`LongReplies`).
        RPCMethod("queue", .read, [], .laterWhen { _, player in LongReplies.isLong(player.queue.items.count) }),
        RPCMethod("play", .control, ["id"], .laterWhen { request, player in request.params.member("id") != nil || player.playStartsQueue }),
        RPCMethod("pause", .control, [], .later),
        RPCMethod("stop", .control, [], .now),
        RPCMethod("seek", .control, ["position", "relative"], .later),
        RPCMethod("next", .control, [], .later),
        RPCMethod("previous", .control, [], .later),
        RPCMethod("remove", .control, ["ids"], .now),
        RPCMethod("move", .control, ["id", "position"], .now),
        RPCMethod("clear", .control, [], .now),
        RPCMethod("options", .control, ["repeat", "single", "consume", "random", "crossfade"], .now),
        RPCMethod("volume", .control, ["level", "delta"], .now),
        RPCMethod("replay_gain", .control, ["mode", "preamp_db"], .now),
        // What is measured of the queue's items (`LoudnessKeeper`); later for a long queue.
        RPCMethod("loudness", .read, ["ids"], .laterWhen { _, player in LongReplies.isLong(player.queue.items.count) }),
        RPCMethod("status", .read, [], .now),
        RPCMethod("announce", .control, ["url", "volume", "duck"], .now),
        RPCMethod("sleep", .control, ["after_s", "fade_s", "at_end_of", "cancel"], .now),
        // Later: answered once the alarms file is on disk.
        RPCMethod("alarms.add", .control, ["time", "days", "url", "queue", "volume", "fade_in_s"], .later),
        RPCMethod("alarms.list", .read, [], .now),
        RPCMethod("alarms.remove", .control, ["id"], .later),
        RPCMethod("retry", .control, [], .later),
        RPCMethod("subscribe", .read, ["events", "position_interval"], .now),
        RPCMethod("library.stats", .read, [], .later),
        RPCMethod("library.update", .control, ["path", "rescan"], .later),
        RPCMethod("library.browse", .read, ["path"], .later),
        RPCMethod("library.search", .read, ["query", "filter", "sort", "offset", "limit"], .later),
        RPCMethod("library.list", .read, ["tag", "filter", "query", "group"], .later),
        RPCMethod("library.art", .read, ["uri"], .later),
        RPCMethod("playlist.list", .read, [], .later),
        RPCMethod("playlist.load", .control, ["name", "position", "play"], .later),
        RPCMethod("playlist.save", .control, ["name", "replace"], .later),
        RPCMethod("playlist.delete", .control, ["name"], .later),
        RPCMethod("ping", .read, [], .now),
        RPCMethod("version", .read, [], .now),
    ]

    static let table: [String: RPCMethod] = Dictionary(uniqueKeysWithValues: all.map { ($0.name, $0) })
    static let names: [String] = all.map(\.name)
    /// Methods a `read` client may call (`AccessPolicy.Level.read`).
    static let readNames: Set<String> = Set(all.filter { $0.access == .read }.map(\.name))
}
