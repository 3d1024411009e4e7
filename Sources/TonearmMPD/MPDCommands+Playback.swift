import Foundation
import TonearmCore
import TonearmFrontEnd
import TonearmMedia
import TonearmPlayer

/// Playback and options: play, pause, stop, next, previous, seek, volume, the queue's switches.
extension MPDCommands {
    static let playbackCommands: [MPDCommand] = [
        MPDCommand(
            "play", .control, 0...1,
            .later { call throws(MPDError) in
                if call.count == 1 {
                    let position = try call.integer(0)
                    // MPD 0.23: -1 means the current song (or resume).
                    if position >= 0 {
                        try await play(call, id: try id(atPosition: position, call.player.queue))
                        return nil
                    }
                }
                try await play(call, id: nil)
                return nil
            }),
        MPDCommand(
            "playid", .control, 0...1,
            .later { call throws(MPDError) in
                var id: Int?
                if call.count == 1 {
                    let given = try call.integer(0)
                    if given >= 0 {
                        guard call.player.queue.item(id: given) != nil else { throw MPDError(.noExist, "No such song") }
                        id = given
                    }
                }
                try await play(call, id: id)
                return nil
            }),
        // Answered once the pause is heard (its fade-out, `output.fade_on_pause`): `status` then
        // shows where it stopped.
        MPDCommand(
            "pause", .control, 0...1,
            .later { call throws(MPDError) in
                let player = call.player
                let wantsPause: Bool
                if call.count == 1 {
                    wantsPause = try call.bool(0)
                } else {
                    // No argument: toggle (deprecated in MPD, still what mpc toggle sends to old servers).
                    wantsPause = MPDEnvironment.stateName(player.state) == "play"
                }
                // As in MPD, pause and resume do nothing while stopped.
                guard MPDEnvironment.stateName(player.state) != "stop" else { return nil }
                do throws(PlayerError) {
                    if wantsPause { _ = try await player.pauseWhenHeard() } else { try player.play() }
                } catch {
                    try settle(error)
                }
                return nil
            }),
        MPDCommand(
            "stop", .control, 0...0,
            .now { call, _ throws(MPDError) in
                guard call.player.state != .idle else { return }
                do throws(PlayerError) { try call.player.stop() } catch { try settle(error) }
            }),
        MPDCommand(
            "next", .control, 0...0,
            .later { call throws(MPDError) in
                // MPD moves on only while playing or paused.
                guard MPDEnvironment.stateName(call.player.state) != "stop" else { throw MPDError(.playerSync, "Not playing") }
                do throws(PlayerError) { _ = try await call.player.next() } catch { try settle(error) }
                return nil
            }),
        MPDCommand(
            "previous", .control, 0...0,
            .later { call throws(MPDError) in
                guard MPDEnvironment.stateName(call.player.state) != "stop" else { throw MPDError(.playerSync, "Not playing") }
                do throws(PlayerError) { _ = try await call.player.previous() } catch { try settle(error) }
                return nil
            }),
        MPDCommand(
            "seek", .control, 2...2,
            .later { call throws(MPDError) in
                let id = try id(atPosition: try call.unsigned(0), call.player.queue)
                try await seek(call, id: id, to: try call.seconds(1))
                return nil
            }),
        MPDCommand(
            "seekid", .control, 2...2,
            .later { call throws(MPDError) in
                let id = try call.unsigned(0)
                guard call.player.queue.item(id: id) != nil else { throw MPDError(.noExist, "No such song") }
                try await seek(call, id: id, to: try call.seconds(1))
                return nil
            }),
        MPDCommand(
            "seekcur", .control, 1...1,
            .later { call throws(MPDError) in
                let text = call[0]
                let relative = text.hasPrefix("+") || text.hasPrefix("-")
                let value = try call.seconds(0, signed: true)
                guard MPDEnvironment.stateName(call.player.state) != "stop" else { throw MPDError(.playerSync, "Not playing") }
                do throws(PlayerError) {
                    _ = try await call.player.seek(to: value, relative: relative)
                } catch {
                    try settle(error, seeking: true)
                }
                return nil
            }),
        MPDCommand(
            "setvol", .control, 1...1,
            .now { call, _ throws(MPDError) in
                _ = call.player.setVolume(level: try call.unsigned(0, max: 100))
            }),
        MPDCommand(
            "volume", .control, 1...1,
            .now { call, _ throws(MPDError) in
                _ = call.player.setVolume(delta: try call.integer(0, in: Bounds.volumeDelta))
            }),
        MPDCommand(
            "repeat", .control, 1...1,
            .now { call, _ throws(MPDError) in
                let on = try call.bool(0)
                _ = call.player.setOptions { $0.repeat = on }
            }),
        MPDCommand(
            "random", .control, 1...1,
            .now { call, _ throws(MPDError) in
                let on = try call.bool(0)
                _ = call.player.setOptions { $0.random = on }
            }),
        MPDCommand(
            "consume", .control, 1...1,
            .now { call, _ throws(MPDError) in
                let on = try call.bool(0)
                _ = call.player.setOptions { $0.consume = on }
            }),
        MPDCommand(
            "single", .control, 1...1,
            .now { call, _ throws(MPDError) in
                let single: Bool
                let oneshot: Bool
                switch call[0] {
                case "1": (single, oneshot) = (true, false)
                case "0": (single, oneshot) = (false, false)
                case "oneshot": (single, oneshot) = (true, true)
                default: throw .argument("Unrecognized single mode, expected 0, 1, or oneshot")
                }
                _ = call.player.setOptions { options in
                    options.single = single
                    options.oneshot = oneshot
                }
            }),
        MPDCommand(
            "replay_gain_mode", .control, 1...1,
            .now { call, _ throws(MPDError) in
                guard let mode = ReplayGainMode(rawValue: call[0]) else { throw .argument("Unrecognized replay gain mode") }
                _ = call.player.setReplayGain(mode: mode)
            }),
        MPDCommand(
            "crossfade", .control, 1...1,
            .now { call, _ throws(MPDError) in
                let seconds = try call.unsigned(0)
                guard Bounds.crossfadeSeconds.contains(Double(seconds)) else {
                    throw .argument("Crossfade is at most \(Int(Bounds.crossfadeSeconds.upperBound)) seconds")
                }
                _ = call.player.setOptions { $0.crossfade = Double(seconds) }
            }),
    ]

    /// The queue item at `position`, with MPD's message when there is none.
    static func id(atPosition position: Int, _ queue: PlayQueue) throws(MPDError) -> Int {
        guard position >= 0, position < queue.items.count else { throw .argument("Bad song index") }
        return queue.items[position].id
    }

    /// `play`/`playid`: a jump to `id`, or with nil: resume, or start the queue when stopped.
    private static func play(_ call: MPDCall, id: Int?) async throws(MPDError) {
        let player = call.player
        if id == nil, player.queue.items.isEmpty { return }
        do throws(PlayerError) {
            if id == nil, !player.playStartsQueue {
                try player.play()
            } else {
                _ = try await player.play(id: id)
            }
        } catch {
            try settle(error)
        }
    }

    /// `seek`/`seekid`: within the current song, or to another song, which then plays from there.
    private static func seek(_ call: MPDCall, id: Int, to seconds: Double) async throws(MPDError) {
        let player = call.player
        do throws(PlayerError) {
            if player.queue.currentID == id, player.state.isActive {
                _ = try await player.seek(to: seconds)
            } else {
                _ = try await player.play(id: id, start: seconds)
            }
        } catch {
            try settle(error, seeking: true)
        }
    }

    /// A player error in MPD's terms. A command another one replaced did what it was asked
    /// (MPD has no such answer), and an action the state makes pointless is not an error for an
    /// MPD client (pause while paused); a failed item is.
    static func settle(_ error: PlayerError, seeking: Bool = false) throws(MPDError) {
        switch error {
        case .superseded: return
        case .rejected(let state, _):
            if seeking { throw MPDError(.playerSync, "Not playing (\(state.name))") }
        case .invalid(let message): throw .argument(message)
        case .failed(let failure):
            throw MPDError(failure.kind == .permissionDenied ? .permission : .system, failure.message)
        }
    }
}
