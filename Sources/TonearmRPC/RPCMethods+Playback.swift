import TonearmCore
import TonearmMedia
import TonearmPlayer
import TonearmProtocol

/// Playback: what plays, where, and how loud.
extension RPCMethods {
    static let playback: [RPCMethod] = [
        RPCMethod(
            "load", .control, ["url", "play", "start"],
            .later { call in
                let params = call.params
                let url = try call.router.sourceURL(params.requiredString("url"))
                try call.router.sources.check(url)
                let loaded = try await call.player.load(url, play: try params.bool("play") ?? false, start: try params.number("start") ?? 0)
                return ["state": ProtocolEncoding.state(loaded.state), "media": ProtocolEncoding.media(loaded.media)]
            }),
        // Later when it names an item or starts the queue: the engine acts first.
        RPCMethod(
            "play", .control, ["id"],
            .either(
                when: { request, player in request.params.member("id") != nil || player.playStartsQueue },
                now: { call in RequestRouter.changed(try call.player.play()) },
                later: { call in
                    let player = call.player
                    let played = try await player.play(id: try call.params.integer("id"))
                    var answer: [String: JSONValue] = ["state": ProtocolEncoding.state(played.state)]
                    answer["changed"] = .bool(played.transition?.didChangeState ?? true)
                    if played.transition == nil { answer["media"] = ProtocolEncoding.media(played.media) }
                    answer["current"] = JSONValue(player.status.current)
                    return .object(answer)
                })),
        RPCMethod("pause", .control, [], .later { call in RequestRouter.changed(try await call.player.pauseWhenHeard()) }),
        RPCMethod("stop", .control, [], .now { call in RequestRouter.changed(try call.player.stop()) }),
        RPCMethod(
            "seek", .control, ["position", "relative"],
            .later { call in
                // Any finite number: the player clamps it to [0, duration].
                let position = try call.params.requiredNumber("position", bounded: false)
                let landed = try await call.player.seek(to: position, relative: try call.params.bool("relative") ?? false)
                return ["position": .number(landed.position), "state": ProtocolEncoding.state(landed.state)]
            }),
        RPCMethod("next", .control, [], .later { call in moved(try await call.player.next(), call.player) }),
        RPCMethod("previous", .control, [], .later { call in moved(try await call.player.previous(), call.player) }),
        RPCMethod(
            "volume", .control, ["level", "delta"],
            .now { call in
                let level = try call.params.integer("level")
                let delta = try call.params.integer("delta")
                if let level, !Bounds.volume.contains(level) {
                    throw RPC.Failure(.invalidParams, "invalid params: 'level' must be a whole number from \(Bounds.text(Bounds.volume))")
                }
                if let delta, !Bounds.volumeDelta.contains(delta) {
                    throw RPC.Failure(.invalidParams, "invalid params: 'delta' must be a whole number from -100 to 100")
                }
                if level != nil && delta != nil {
                    throw RPC.Failure(.invalidParams, "invalid params: give 'level' or 'delta', not both")
                }
                return ["volume": JSONValue(call.player.setVolume(level: level, delta: delta))]
            }),
        RPCMethod(
            "replay_gain", .control, ["mode", "preamp_db"],
            .now { call in
                var mode: ReplayGainMode?
                if let text = try call.params.string("mode") {
                    guard let parsed = ReplayGainMode(rawValue: text) else {
                        throw RPC.Failure(.invalidParams, "invalid params: 'mode' must be off, track, album, auto or loudness")
                    }
                    mode = parsed
                }
                let preamp = try call.params.number("preamp_db", unit: "decibels")
                if let preamp, !Bounds.preampDB.contains(preamp) {
                    throw RPC.Failure(.invalidParams, "invalid params: 'preamp_db' must be a number from \(Bounds.text(Bounds.preampDB))")
                }
                return ProtocolEncoding.replayGain(call.player.setReplayGain(mode: mode, preampDB: preamp))
            }),
        RPCMethod(
            "retry", .control, [],
            .later { call in
                let loaded = try await call.player.retry()
                return ["state": ProtocolEncoding.state(loaded.state), "media": ProtocolEncoding.media(loaded.media)]
            }),
    ]

    /// `next` and `previous`: where playback went.
    private static func moved(_ moved: (media: MediaInfo?, state: PlaybackState), _ player: Player) -> JSONValue {
        [
            "state": ProtocolEncoding.state(moved.state), "media": ProtocolEncoding.media(moved.media),
            "current": JSONValue(player.status.current),
        ]
    }
}
