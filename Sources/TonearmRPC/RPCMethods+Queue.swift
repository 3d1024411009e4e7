import NIOCore
import TonearmCore
import TonearmFrontEnd
import TonearmMedia
import TonearmPlayer
import TonearmProtocol

/// The queue: what is in it, edits, its options, what is measured of its items.
extension RPCMethods {
    static let queue: [RPCMethod] = [
        // Later to read a playlist file or the library, which is disk work for no event loop, and
        // to play what was added.
        RPCMethod(
            "add", .control, ["urls", "position", "play"],
            .either(
                when: { request, _ in
                    if request.params.member("play") == .bool(true) { return true }
                    guard case .array(let urls)? = request.params.member("urls") else { return false }
                    // Later too for a song named by its library path: its tags are read from the library.
                    return urls.contains {
                        if case .string(let text) = $0 {
                            PlaylistFile.kind(forPath: text) != nil || RequestRouter.isLibraryPath(text)
                        } else {
                            false
                        }
                    }
                },
                now: { call in try call.router.add(call.params, for: call.session.peer).answer },
                later: { call in try await call.router.addAndPlay(call.params, session: call.session) })),
        // Later for a long queue, to encode it off the event loop (`LongReplies`).
        RPCMethod(
            "queue", .read, [],
            .either(
                when: { _, player in LongReplies.isLong(player.queue.items.count) },
                now: { call in queueListing(call.player) },
                later: { call in await encodedOffTheLoop(call.router) { queueListing(call.player) } })),
        RPCMethod(
            "remove", .control, ["ids"],
            .now { call in
                ["version": JSONValue(try call.player.remove(ids: try call.params.requiredIntegerArray("ids")))]
            }),
        RPCMethod(
            "move", .control, ["id", "position"],
            .now { call in
                let id = try call.params.requiredInteger("id")
                return ["version": JSONValue(try call.player.move(id: id, to: try call.params.requiredInteger("position")))]
            }),
        RPCMethod(
            "clear", .control, [],
            .now { call in
                ["version": JSONValue(try call.player.clear()), "state": ProtocolEncoding.state(call.player.state)]
            }),
        RPCMethod(
            "options", .control, ["repeat", "single", "consume", "random", "crossfade"],
            .now { call in
                let params = call.params
                let repeatFlag = try params.bool("repeat")
                let single = try params.bool("single")
                let consume = try params.bool("consume")
                let random = try params.bool("random")
                let crossfade = try params.number("crossfade")
                if let crossfade, !Bounds.crossfadeSeconds.contains(crossfade) {
                    throw RPC.Failure(
                        .invalidParams,
                        "invalid params: 'crossfade' must be a number of seconds from \(Bounds.text(Bounds.crossfadeSeconds))")
                }
                let options = call.player.setOptions { options in
                    if let repeatFlag { options.repeat = repeatFlag }
                    if let single { options.single = single }
                    if let consume { options.consume = consume }
                    if let random { options.random = random }
                    if let crossfade { options.crossfade = crossfade }
                }
                return [
                    "repeat": .bool(options.repeat), "single": .bool(options.single), "consume": .bool(options.consume),
                    "random": .bool(options.random), "crossfade": JSONValue(options.crossfade),
                    "version": JSONValue(call.player.queue.version),
                ]
            }),
        // What is measured of the queue's items (`LoudnessKeeper`); later for a long queue.
        RPCMethod(
            "loudness", .read, ["ids"],
            .either(
                when: { _, player in LongReplies.isLong(player.queue.items.count) },
                now: { call in loudnessListing(call.player, try loudnessIDs(call.params)) },
                later: { call in
                    let ids = try loudnessIDs(call.params)
                    return await encodedOffTheLoop(call.router) { loudnessListing(call.player, ids) }
                })),
    ]

    private static func queueListing(_ player: Player) -> JSONValue {
        ProtocolEncoding.queue(player.queue, next: player.status.next, tags: player.tags(for:), duration: player.duration(of:))
    }

    private static func loudnessIDs(_ params: Params) throws -> [Int]? {
        params.object["ids"] == nil ? nil : try params.requiredIntegerArray("ids")
    }

    /// The measured loudness of the queue's items `ids` (all when nil): null while not known.
    private static func loudnessListing(_ player: Player, _ ids: [Int]?) -> JSONValue {
        let wanted = ids.map(Set.init)
        let items = player.queue.items.filter { wanted?.contains($0.id) ?? true }
        return [
            "items": .array(
                items.map { item in
                    ["id": JSONValue(item.id), "loudness": player.loudness(of: item.url).map(ProtocolEncoding.loudness) ?? .null]
                })
        ]
    }

    /// A long listing encoded on `LongReplies`' thread: the event loop goes on serving the other clients.
    private static func encodedOffTheLoop(_ router: RequestRouter, _ listing: @escaping @Sendable () -> JSONValue) async -> JSONValue {
        await router.longReplies.encode {
            var bytes = ByteBuffer()
            JSONCoding.serialize(listing(), into: &bytes)
            return .encoded(bytes)
        }
    }
}
