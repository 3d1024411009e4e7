import Foundation
import TOMLKit
import TonearmFrontEnd
import TonearmMPD
import TonearmMedia
import TonearmWeb

/// Every key of the config file, each declared once (`ConfigKey`), in the sections' order. The
/// parser (`DaemonConfiguration.applying(toml:)`) knows no key by itself: it looks each up here.
/// Tests hold the documented config/tonearmd.toml, the environment and `tonearmd --help` to the
/// same keys.
enum ConfigSchema {
    typealias Invalid = DaemonConfiguration.Invalid

    /// The tables, in the order they are applied.
    static let sections = [
        "output", "snapcast", "replay_gain", "control", "input", "state", "library", "mpd", "http", "upnp", "crossfade",
        "announce", "log",
    ]

    static let byName: [String: ConfigKey] = Dictionary(uniqueKeysWithValues: keys.map { ($0.name, $0) })

    static let keys: [ConfigKey] =
        [
            ConfigKey("socket", environment: "TONEARM_SOCKET", flag: "--socket") { config, value, source in
                guard let socket = value.string, !socket.isEmpty else { throw Invalid("\(source): socket must be a non-empty string") }
                config.socket = socket
            }
        ] + output + snapcast + replayGain + control + input + state + library + mpd + http + upnp + crossfade + announce + log

    static let output: [ConfigKey] = [
        .choice("output.kind", "\"alsa\" or \"snapcast\"", \.outputKind),
        ConfigKey("output.device", environment: "TONEARM_DEVICE", flag: "--device") { config, value, source in
            config.output.device = try string(value, "output.device", source)
        },
        ConfigKey("output.sample_rate") { config, value, source in
            config.output.sampleRate = try zeroMeansSource(integer(value, "output.sample_rate", source, 0...768_000))
        },
        ConfigKey("output.channels") { config, value, source in
            config.output.channels = try zeroMeansSource(integer(value, "output.channels", source, 0...32))
        },
        ConfigKey("output.format") { config, value, source in
            config.output.sampleType = try DaemonConfiguration.sampleType(string(value, "output.format", source), source)
        },
        .integer(
            "output.buffer_ms", Bounds.bufferMilliseconds, environment: "TONEARM_BUFFER_MS", flag: "--buffer-ms",
            \.output.bufferMilliseconds),
        .bool("output.pace", environment: "TONEARM_PACE", flag: "--pace", \.output.pace),
        ConfigKey("output.speed", environment: "TONEARM_SPEED", flag: "--speed") { config, value, source in
            config.output.speed = try DaemonConfiguration.speed(number(value, "output.speed", source), source)
        },
        .integer("output.reopen_interval_ms", 100...600_000, flag: "--reopen-interval-ms", \.output.reopenIntervalMilliseconds),
        .integer("output.open_timeout_ms", 100...600_000, flag: "--open-timeout-ms", \.output.openTimeoutMilliseconds),
        .bool("output.wait_for_device", flag: "--wait-for-device", \.output.waitForDevice),
        .bool("output.fade_on_pause", flag: "--pause-fade", \.output.fadesOnPause),
        .bool("output.resume_after_interruption", flag: "--resume-after-interruption", \.output.resumeAfterInterruption),
        ConfigKey("output.release_after_s") { config, value, source in
            let seconds = try number(value, "output.release_after_s", source)
            guard seconds == -1 || (0...86_400).contains(seconds) else {
                throw Invalid("\(source): output.release_after_s must be -1 (keep the device open) or 0 to 86400 seconds")
            }
            config.output.releaseAfterSeconds = seconds == -1 ? nil : seconds
        },
        .command("output.on_open", \.output.onOpen),
        .command("output.on_close", \.output.onClose),
        .integer("output.hook_timeout_ms", 10...600_000, \.output.hookTimeoutMilliseconds),
        .integer("output.volume", Bounds.volume, \.volume),
    ]

    static let snapcast: [ConfigKey] = [
        ConfigKey("snapcast.source") { config, value, source in
            let text = try string(value, "snapcast.source", source)
            guard SnapcastSettings.hostAndPort(text) != nil else {
                throw Invalid("\(source): snapcast.source must be HOST:PORT (e.g. \"127.0.0.1:4953\"), not '\(text)'")
            }
            config.snapcast.source = text
        },
        ConfigKey("snapcast.format") { config, value, source in
            let text = try string(value, "snapcast.format", source)
            guard SnapcastSettings.format(text) != nil else {
                throw Invalid(
                    "\(source): snapcast.format must be RATE:BITS:CHANNELS with 16 or 32 bits (e.g. \"48000:16:2\"), not '\(text)'")
            }
            config.snapcast.format = text
        },
    ]

    static let replayGain: [ConfigKey] = [
        .choice("replay_gain.mode", "off, track, album, auto or loudness", \.replayGain.mode),
        ConfigKey("replay_gain.preamp_db") { config, value, source in
            let preamp = try number(value, "replay_gain.preamp_db", source)
            guard preamp.isFinite, Bounds.preampDB.contains(preamp) else {
                throw Invalid("\(source): replay_gain.preamp_db must be a number from \(Bounds.text(Bounds.preampDB))")
            }
            config.replayGain.preampDB = preamp
        },
        ConfigKey("replay_gain.target_lufs") { config, value, source in
            let target = try number(value, "replay_gain.target_lufs", source)
            guard target.isFinite, (-40...(-5)).contains(target) else {
                throw Invalid("\(source): replay_gain.target_lufs must be a number from -40 to -5")
            }
            config.replayGain.targetLUFS = target
        },
        .choice("replay_gain.live", "off or agc", \.replayGain.live),
    ]

    static let control: [ConfigKey] = [
        .integer("control.max_clients", 1...65_536, \.maxClients),
        .clientLimit("control.max_output_buffer_size", \.controlLimits),
        .clientLimit("control.connection_timeout", \.controlLimits),
        ConfigKey("control.socket_mode") { config, value, source in
            let text = try string(value, "control.socket_mode", source)
            guard let mode = UInt16(text, radix: 8), mode <= 0o777, text.count >= 3 else {
                throw Invalid("\(source): control.socket_mode must be octal permissions such as \"0660\", not '\(text)'")
            }
            config.security.socketMode = mode
        },
        ConfigKey("control.socket_group") { config, value, source in
            let text = try string(value, "control.socket_group", source)
            config.security.socketGroup = text.isEmpty ? nil : try DaemonConfiguration.groupID(text, "control.socket_group", source)
        },
        ConfigKey("control.allow_uids") { config, value, source in
            config.security.policy.allowUIDs = Set(try ids(value, "control.allow_uids", source, DaemonConfiguration.userID))
        },
        ConfigKey("control.allow_gids") { config, value, source in
            config.security.policy.allowGIDs = Set(try ids(value, "control.allow_gids", source, DaemonConfiguration.groupID))
        },
        ConfigKey("control.read_gids") { config, value, source in
            config.security.policy.readGIDs = Set(try ids(value, "control.read_gids", source, DaemonConfiguration.groupID))
        },
    ]
}
