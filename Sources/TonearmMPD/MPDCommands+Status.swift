import Foundation
import TonearmCore
import TonearmFrontEnd
import TonearmLibrary
import TonearmMedia
import TonearmPlayer

/// Reading commands: the player's and the daemon's state, in MPD's words.
extension MPDCommands {
    static let statusCommands: [MPDCommand] = [
        MPDCommand("status", .read, 0...0, .now { call, r in writeStatus(call.environment, into: &r) }),
        MPDCommand(
            "currentsong", .read, 0...0,
            .now { call, r in
                let status = call.player.status
                let queue = call.player.queue
                guard let id = queue.currentID, let position = queue.position(of: id), let item = queue.item(id: id) else { return }
                call.environment.writeSong(item, position: position, media: status.media, shown: call.tags, into: &r)
            }),
        MPDCommand(
            "stats", .read, 0...0,
            .later { call throws(MPDError) in
                let environment = call.environment
                // Counting a large library takes a moment: on the library's thread.
                return try await environment.library.perform { () throws(MPDError) in
                    var r = MPDResponse()
                    r.add("uptime", environment.uptime)
                    r.add("playtime", environment.playtime)
                    // No database: the counts of an empty one.
                    let stats = try environment.library.stats() ?? LibraryStats()
                    r.add("artists", stats.artists)
                    r.add("albums", stats.albums)
                    r.add("songs", stats.songs)
                    r.add("db_playtime", Int(stats.playtime.rounded()))
                    r.add("db_update", stats.updated)
                    if let offline = environment.library.database?.offline { r.add("library_offline", offline) }
                    return r.buffer
                }
            }),
        MPDCommand("ping", .none, 0...0, .now { _, _ in }),
        MPDCommand(
            "urlhandlers", .read, 0...0,
            .now { call, r in
                for scheme in call.environment.library.sources.input.protocols { r.add("handler", "\(scheme)://") }
            }),
        MPDCommand(
            "decoders", .read, 0...0,
            .now { _, r in
                r.add("plugin", "ffmpeg")
                for suffix in LibraryFiles.songSuffixes { r.add("suffix", suffix) }
            }),
        MPDCommand(
            "outputs", .read, 0...0,
            .now { call, r in
                r.add("outputid", 0)
                r.add("outputname", call.environment.outputName)
                r.add("plugin", "alsa")
                r.add("outputenabled", 1)
            }),
        MPDCommand("getvol", .read, 0...0, .now { call, r in r.add("volume", call.player.status.volume) }),
        MPDCommand(
            "replay_gain_status", .read, 0...0,
            .now { call, r in
                r.add("replay_gain_mode", call.player.status.replayGain.mode.rawValue)
            }),
        MPDCommand(
            "config", .control, 0...0,
            .now { call, r in
                if let root = call.environment.library.root { r.add("music_directory", root) }
            }),
    ]

    /// `status`, in MPD 0.23's order (src/command/PlayerCommands.cxx): encoded once per change.
    static func writeStatus(_ environment: MPDEnvironment, into r: inout MPDResponse) {
        let queue = environment.player.queue
        let source = MPDEnvironment.StatusSource(
            status: environment.player.status, queueVersion: queue.version,
            options: queue.options, currentID: queue.currentID,
            updatingJob: environment.library.database?.updatingJob,
            libraryOffline: environment.library.database?.offline)
        var lines = environment.statusLines.bytes(for: source) { source in
            var lines = MPDResponse()
            writeStatusLines(source, queue, into: &lines)
            return lines.buffer
        }
        r.buffer.writeBuffer(&lines)
    }

    private static func writeStatusLines(_ source: MPDEnvironment.StatusSource, _ queue: PlayQueue, into r: inout MPDResponse) {
        let status = source.status
        let options = queue.options
        r.add("volume", status.volume)
        r.add("repeat", options.repeat)
        r.add("random", options.random)
        r.add("single", options.single ? (options.oneshot ? "oneshot" : "1") : "0")
        r.add("consume", options.consume)
        // As MPD: only when set, in whole seconds.
        if options.crossfade > 0 { r.add("xfade", Int(options.crossfade.rounded())) }
        r.add("partition", "default")
        r.add("playlist", queue.version)
        r.add("playlistlength", queue.items.count)
        r.add("mixrampdb", "0")
        let state = MPDEnvironment.stateName(status.state)
        r.add("state", state)
        if let id = queue.currentID, let position = queue.position(of: id) {
            r.add("song", position)
            r.add("songid", id)
        }
        if state != "stop", let media = status.media {
            let duration = media.duration ?? 0
            r.add("time", "\(Int(status.position.rounded())):\(Int(duration.rounded()))")
            r.add("elapsed", seconds: status.position)
            r.add("bitrate", (media.bitRate ?? 0) / 1000)
            if let total = media.duration { r.add("duration", seconds: total) }
            r.add("audio", MPDEnvironment.audioFormat(media))
        }
        if let job = source.updatingJob { r.add("updating_db", job) }
        // MPD has no word for an offline library; clients show `error`, and it says why
        // songs cannot be found until the music directory is back.
        if let error = errorText(status) ?? source.libraryOffline.map({ "music directory offline: \($0)" }) {
            r.add("error", error)
        }
        if let next = status.next, let position = queue.position(of: next) {
            r.add("nextsong", position)
            r.add("nextsongid", next)
        }
    }

    private static func errorText(_ status: PlayerStatus) -> String? {
        if case .failed(let error) = status.state { return error.message }
        return status.interruption
    }
}
