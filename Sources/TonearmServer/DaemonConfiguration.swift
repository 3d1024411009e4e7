import Foundation
import Logging
import TOMLKit
import TonearmFrontEnd
import TonearmLibrary
import TonearmMPD
import TonearmMedia
import TonearmPlayer
import TonearmWeb

/// The daemon's settings: the embedded default, then a TOML file, then TONEARM_* variables,
/// then flags, each overriding the one before.
package struct DaemonConfiguration: Sendable, Equatable {
    package var socket: String?
    package var output = OutputConfiguration()
    /// Where the sound goes (`output.kind`): ALSA's `output.device`, or a Snapcast server.
    package var outputKind = OutputKind.alsa
    /// The Snapcast server's stream source and its format (`[snapcast]`).
    package var snapcast = SnapcastSettings()
    /// Which protocols sources may use, and how network sources are buffered (`[input]`).
    package var input = InputConfiguration()
    /// Software volume at start, 0–100 (`output.volume`).
    package var volume = 100
    /// ReplayGain at start (`[replay_gain]`).
    package var replayGain = ReplayGainSettings()
    /// How crossfades are made (`[crossfade]`).
    package var crossfade = CrossfadeSettings()
    /// How announcements play (`[announce]`).
    package var announcements = AnnouncementSettings()
    /// Clients connected at once (`control.max_clients`); the next one is told so and closed.
    package var maxClients = 256
    /// Per control client: the cap on unread replies and the silence after which it is closed.
    package var controlLimits = ClientLimits()
    /// The socket's mode and group, who may control or read, and the media roots.
    package var security = ControlSecurity()
    /// Where the state file lives (`state.directory`); nil: `StateFile.defaultDirectory`.
    package var stateDirectory: String?
    /// How a restart resumes (`state.resume`).
    package var resume = ResumeMode.paused
    /// How often the position is saved while playing (`state.save_interval_s`).
    package var saveIntervalSeconds = 5.0
    package var logLevel: Logger.Level = .info
    /// MPD's protocol (`[mpd]`).
    package var mpd = MPDSettings()
    /// The web remote (`[http]`).
    package var http = WebSettings()
    /// The music library (`[library]`); its music directory nil: the first of `input.roots`.
    package var library = LibraryConfiguration()
    /// What the daemon should say once it logs: keys that still work but have moved.
    package var notices: [String] = []

    package init() {}

    package struct Invalid: Error, CustomStringConvertible {
        package let description: String
        init(_ description: String) { self.description = description }
    }

    /// The documented config/tonearmd.toml, built into tonearmd (`PackageResources`) so that it
    /// runs with no file.
    static let embeddedDefaultTOML = String(decoding: PackageResources.tonearmd_toml, as: UTF8.self)

    /// The default config, byte for byte the documented config/tonearmd.toml.
    package static func embeddedDefault() -> DaemonConfiguration {
        // The embedded text is valid TOML; a test parses the file and compares.
        (try? DaemonConfiguration().applying(toml: embeddedDefaultTOML, source: "embedded default")) ?? DaemonConfiguration()
    }

    package func applying(tomlFile path: String) throws -> DaemonConfiguration {
        guard let text = FileManager.default.contents(atPath: path).map({ String(decoding: $0, as: UTF8.self) }) else {
            throw Invalid("cannot read config file \(path)")
        }
        return try applying(toml: text, source: path)
    }

    package func applying(toml text: String, source: String) throws -> DaemonConfiguration {
        let table: TOMLTable
        do { table = try TOMLTable(string: text) } catch {
            throw Invalid("\(source): not valid TOML: \(error)")
        }
        var config = self
        for key in table.keys
        where ![
            "socket", "output", "replay_gain", "control", "input", "state", "log", "mpd", "snapcast",
            "library", "http", "crossfade", "announce",
        ].contains(key) {
            throw Invalid("\(source): unknown key '\(key)'")
        }
        if let value = table["socket"] {
            guard let socket = value.string, !socket.isEmpty else { throw Invalid("\(source): socket must be a non-empty string") }
            config.socket = socket
        }
        if let output = table["output"] {
            guard let output = output.table else { throw Invalid("\(source): [output] must be a table") }
            for key in output.keys {
                let value = output[key]!
                switch key {
                case "device": config.output.device = try string(value, "output.device", source)
                case "kind":
                    let text = try string(value, "output.kind", source)
                    guard let kind = OutputKind(rawValue: text) else {
                        throw Invalid("\(source): output.kind must be \"alsa\" or \"snapcast\", not '\(text)'")
                    }
                    config.outputKind = kind
                case "sample_rate":
                    config.output.sampleRate = try zeroMeansSource(integer(value, "output.sample_rate", source, 0...768_000))
                case "channels": config.output.channels = try zeroMeansSource(integer(value, "output.channels", source, 0...32))
                case "format": config.output.sampleType = try Self.sampleType(string(value, "output.format", source), source)
                case "buffer_ms":
                    config.output.bufferMilliseconds = try integer(value, "output.buffer_ms", source, Bounds.bufferMilliseconds)
                case "pace": config.output.pace = try bool(value, "output.pace", source)
                case "speed": config.output.speed = try Self.speed(number(value, "output.speed", source), source)
                case "reopen_interval_ms":
                    config.output.reopenIntervalMilliseconds = try integer(value, "output.reopen_interval_ms", source, 100...600_000)
                case "open_timeout_ms":
                    config.output.openTimeoutMilliseconds = try integer(value, "output.open_timeout_ms", source, 100...600_000)
                case "wait_for_device":
                    config.output.waitForDevice = try bool(value, "output.wait_for_device", source)
                case "fade_on_pause": config.output.fadesOnPause = try bool(value, "output.fade_on_pause", source)
                case "resume_after_interruption":
                    config.output.resumeAfterInterruption = try bool(value, "output.resume_after_interruption", source)
                case "release_after_s":
                    let seconds = try number(value, "output.release_after_s", source)
                    guard seconds == -1 || (0...86_400).contains(seconds) else {
                        throw Invalid("\(source): output.release_after_s must be -1 (keep the device open) or 0 to 86400 seconds")
                    }
                    config.output.releaseAfterSeconds = seconds == -1 ? nil : seconds
                case "on_open": config.output.onOpen = try command(value, "output.on_open", source)
                case "on_close": config.output.onClose = try command(value, "output.on_close", source)
                case "hook_timeout_ms":
                    config.output.hookTimeoutMilliseconds = try integer(value, "output.hook_timeout_ms", source, 10...600_000)
                case "volume": config.volume = try integer(value, "output.volume", source, Bounds.volume)
                default: throw Invalid("\(source): unknown key 'output.\(key)'")
                }
            }
        }
        if let snapcast = table["snapcast"] {
            guard let snapcast = snapcast.table else { throw Invalid("\(source): [snapcast] must be a table") }
            for key in snapcast.keys {
                let value = snapcast[key]!
                switch key {
                case "source":
                    let text = try string(value, "snapcast.source", source)
                    guard SnapcastSettings.hostAndPort(text) != nil else {
                        throw Invalid("\(source): snapcast.source must be HOST:PORT (e.g. \"127.0.0.1:4953\"), not '\(text)'")
                    }
                    config.snapcast.source = text
                case "format":
                    let text = try string(value, "snapcast.format", source)
                    guard SnapcastSettings.format(text) != nil else {
                        throw Invalid(
                            "\(source): snapcast.format must be RATE:BITS:CHANNELS with 16 or 32 bits (e.g. \"48000:16:2\"), not '\(text)'")
                    }
                    config.snapcast.format = text
                default: throw Invalid("\(source): unknown key 'snapcast.\(key)'")
                }
            }
        }
        if let replayGain = table["replay_gain"] {
            guard let replayGain = replayGain.table else { throw Invalid("\(source): [replay_gain] must be a table") }
            for key in replayGain.keys {
                let value = replayGain[key]!
                switch key {
                case "mode":
                    let text = try string(value, "replay_gain.mode", source)
                    guard let mode = ReplayGainMode(rawValue: text) else {
                        throw Invalid("\(source): replay_gain.mode must be off, track, album, auto or loudness, not '\(text)'")
                    }
                    config.replayGain.mode = mode
                case "preamp_db":
                    let preamp = try number(value, "replay_gain.preamp_db", source)
                    guard preamp.isFinite, Bounds.preampDB.contains(preamp) else {
                        throw Invalid("\(source): replay_gain.preamp_db must be a number from \(Bounds.text(Bounds.preampDB))")
                    }
                    config.replayGain.preampDB = preamp
                case "target_lufs":
                    let target = try number(value, "replay_gain.target_lufs", source)
                    guard target.isFinite, (-40...(-5)).contains(target) else {
                        throw Invalid("\(source): replay_gain.target_lufs must be a number from -40 to -5")
                    }
                    config.replayGain.targetLUFS = target
                case "live":
                    let text = try string(value, "replay_gain.live", source)
                    guard let live = LiveGainMode(rawValue: text) else {
                        throw Invalid("\(source): replay_gain.live must be off or agc, not '\(text)'")
                    }
                    config.replayGain.live = live
                default: throw Invalid("\(source): unknown key 'replay_gain.\(key)'")
                }
            }
        }
        if let control = table["control"] {
            guard let control = control.table else { throw Invalid("\(source): [control] must be a table") }
            for key in control.keys {
                let value = control[key]!
                switch key {
                case "max_clients": config.maxClients = try integer(value, "control.max_clients", source, 1...65_536)
                case "max_output_buffer_size", "connection_timeout":
                    try clientLimit(key, value, "control", source, &config.controlLimits)
                case "socket_mode":
                    let text = try string(value, "control.socket_mode", source)
                    guard let mode = UInt16(text, radix: 8), mode <= 0o777, text.count >= 3 else {
                        throw Invalid("\(source): control.socket_mode must be octal permissions such as \"0660\", not '\(text)'")
                    }
                    config.security.socketMode = mode
                case "socket_group":
                    let text = try string(value, "control.socket_group", source)
                    config.security.socketGroup = text.isEmpty ? nil : try Self.groupID(text, "control.socket_group", source)
                case "allow_uids":
                    config.security.policy.allowUIDs = Set(try ids(value, "control.allow_uids", source, Self.userID))
                case "allow_gids":
                    config.security.policy.allowGIDs = Set(try ids(value, "control.allow_gids", source, Self.groupID))
                case "read_gids":
                    config.security.policy.readGIDs = Set(try ids(value, "control.read_gids", source, Self.groupID))
                default: throw Invalid("\(source): unknown key 'control.\(key)'")
                }
            }
        }
        if let input = table["input"] {
            guard let input = input.table else { throw Invalid("\(source): [input] must be a table") }
            for key in input.keys {
                let value = input[key]!
                switch key {
                case "roots":
                    guard let array = value.array else { throw Invalid("\(source): input.roots must be an array of paths") }
                    let roots = try array.map { element -> String in
                        guard let path = element.string, path.hasPrefix("/") else {
                            throw Invalid("\(source): input.roots must hold absolute paths")
                        }
                        return path
                    }
                    config.security.roots = MediaRoots(roots)
                    config.input.roots = config.security.roots.paths
                case "protocols":
                    let supported = InputConfiguration.supportedProtocols
                    guard let array = value.array else { throw Invalid("\(source): input.protocols must be an array of protocol names") }
                    config.input.protocols = try array.map { element -> String in
                        guard let name = element.string?.lowercased(), supported.contains(name) else {
                            throw Invalid(
                                "\(source): input.protocols: '\(element.string ?? "\(element)")' is not a protocol Tonearm plays (\(supported.joined(separator: ", ")) are)"
                            )
                        }
                        return name
                    }
                case "prebuffer_ms":
                    config.input.prebufferSeconds = Double(try integer(value, "input.prebuffer_ms", source, 0...30_000)) / 1000
                case "timeout_ms":
                    config.input.timeoutSeconds = Double(try integer(value, "input.timeout_ms", source, 100...600_000)) / 1000
                case "reconnect_for_s":
                    config.input.reconnectForSeconds = Double(try integer(value, "input.reconnect_for_s", source, 0...31_536_000))
                case "tls_verify":
                    guard let flag = value.bool else { throw Invalid("\(source): input.tls_verify must be true or false") }
                    config.input.tlsVerify = flag
                case "ca_file":
                    let path = try string(value, "input.ca_file", source)
                    guard path.hasPrefix("/") else { throw Invalid("\(source): input.ca_file must be an absolute path to a PEM file") }
                    guard FileManager.default.isReadableFile(atPath: path) else {
                        throw Invalid("\(source): input.ca_file: cannot read \(path)")
                    }
                    config.input.caFile = path
                default:
                    throw Invalid("\(source): unknown key 'input.\(key)'")
                }
            }
        }
        if let state = table["state"] {
            guard let state = state.table else { throw Invalid("\(source): [state] must be a table") }
            for key in state.keys {
                let value = state[key]!
                switch key {
                case "directory":
                    let directory = try string(value, "state.directory", source)
                    guard directory.isEmpty || directory.hasPrefix("/") else {
                        throw Invalid("\(source): state.directory must be an absolute path, or \"\" for the default")
                    }
                    config.stateDirectory = directory.isEmpty ? nil : directory
                case "resume":
                    let text = try string(value, "state.resume", source)
                    guard let mode = ResumeMode(rawValue: text) else {
                        throw Invalid("\(source): state.resume must be paused, playing or off, not '\(text)'")
                    }
                    config.resume = mode
                case "save_interval_s":
                    let seconds = try number(value, "state.save_interval_s", source)
                    guard seconds.isFinite, (0.1...3600).contains(seconds) else {
                        throw Invalid("\(source): state.save_interval_s must be a number from 0.1 to 3600")
                    }
                    config.saveIntervalSeconds = seconds
                default: throw Invalid("\(source): unknown key 'state.\(key)'")
                }
            }
        }
        if let library = table["library"] {
            guard let library = library.table else { throw Invalid("\(source): [library] must be a table") }
            for key in library.keys {
                let value = library[key]!
                switch key {
                case "music_directory": config.library.musicDirectory = try musicDirectory(value, "library.music_directory", source)
                case "scan_on_start": config.library.scanOnStart = try bool(value, "library.scan_on_start", source)
                case "follow_symlinks": config.library.followSymlinks = try bool(value, "library.follow_symlinks", source)
                case "scan_threads":
                    let threads = try integer(value, "library.scan_threads", source, 0...64)
                    config.library.scanThreads = threads == 0 ? ProcessInfo.processInfo.activeProcessorCount : threads
                case "watch": config.library.watch = try bool(value, "library.watch", source)
                case "measure_loudness": config.library.measureLoudness = try bool(value, "library.measure_loudness", source)
                case "rescan_interval_s":
                    let seconds = try number(value, "library.rescan_interval_s", source)
                    guard seconds.isFinite, seconds == 0 || (1...604_800).contains(seconds) else {
                        throw Invalid("\(source): library.rescan_interval_s must be 0 (never) or a number of seconds from 1 to 604800")
                    }
                    config.library.rescanIntervalSeconds = seconds
                case "playlist_directory":
                    let path = try string(value, "library.playlist_directory", source)
                    guard path.isEmpty || path.hasPrefix("/") else {
                        throw Invalid(
                            "\(source): library.playlist_directory must be an absolute path, or \"\" for playlists/ in the state directory")
                    }
                    config.library.playlistDirectory = path.isEmpty ? nil : path
                default: throw Invalid("\(source): unknown key 'library.\(key)'")
                }
            }
        }
        if let mpd = table["mpd"] {
            guard let mpd = mpd.table else { throw Invalid("\(source): [mpd] must be a table") }
            for key in mpd.keys {
                let value = mpd[key]!
                switch key {
                case "enabled": config.mpd.enabled = try bool(value, "mpd.enabled", source)
                case "socket":
                    let path = try string(value, "mpd.socket", source)
                    guard path.isEmpty || path.hasPrefix("/") else {
                        throw Invalid("\(source): mpd.socket must be an absolute path, or \"\" for mpd.sock beside the control socket")
                    }
                    config.mpd.socket = path.isEmpty ? nil : path
                case "bind":
                    let text = try string(value, "mpd.bind", source)
                    if text.isEmpty {
                        config.mpd.bind = nil
                    } else {
                        guard let address = MPDSettings.TCPAddress(text) else {
                            throw Invalid("\(source): mpd.bind must be \"host:port\" such as \"127.0.0.1:6600\", not '\(text)'")
                        }
                        config.mpd.bind = address
                    }
                case "password":
                    let text = try string(value, "mpd.password", source)
                    guard !text.contains(where: \.isNewline) else { throw Invalid("\(source): mpd.password cannot hold a line break") }
                    config.mpd.password = text.isEmpty ? nil : text
                case "music_directory":
                    config.library.musicDirectory = try musicDirectory(value, "mpd.music_directory", source)
                    config.notices.append("\(source): mpd.music_directory is now library.music_directory; the old key still works")
                case "max_clients": config.mpd.maxClients = try integer(value, "mpd.max_clients", source, 1...65_536)
                case "max_output_buffer_size", "connection_timeout":
                    try clientLimit(key, value, "mpd", source, &config.mpd.limits)
                default: throw Invalid("\(source): unknown key 'mpd.\(key)'")
                }
            }
        }
        if let http = table["http"] { try config.applyHTTP(http, source) }
        if let crossfade = table["crossfade"] { try config.applyCrossfade(crossfade, source) }
        if let announce = table["announce"] { try config.applyAnnounce(announce, source) }
        if let log = table["log"] {
            guard let log = log.table else { throw Invalid("\(source): [log] must be a table") }
            for key in log.keys {
                guard key == "level" else { throw Invalid("\(source): unknown key 'log.\(key)'") }
                config.logLevel = try Self.logLevel(string(log[key]!, "log.level", source), source)
            }
        }
        return config
    }

    /// TONEARM_SOCKET, TONEARM_DEVICE, TONEARM_PACE, TONEARM_SPEED, TONEARM_BUFFER_MS, TONEARM_LOG_LEVEL.
    package func applying(environment: [String: String]) throws -> DaemonConfiguration {
        var config = self
        if let socket = environment["TONEARM_SOCKET"], !socket.isEmpty { config.socket = socket }
        if let device = environment["TONEARM_DEVICE"], !device.isEmpty { config.output.device = device }
        if let pace = environment["TONEARM_PACE"] {
            switch pace.lowercased() {
            case "1", "true", "yes", "on": config.output.pace = true
            case "0", "false", "no", "off", "": config.output.pace = false
            default: throw Invalid("TONEARM_PACE must be true or false, not '\(pace)'")
            }
        }
        if let speed = environment["TONEARM_SPEED"] {
            guard let value = Double(speed) else { throw Invalid("TONEARM_SPEED must be a number, not '\(speed)'") }
            config.output.speed = try Self.speed(value, "TONEARM_SPEED")
        }
        if let buffer = environment["TONEARM_BUFFER_MS"] {
            guard let value = Int(buffer), Bounds.bufferMilliseconds.contains(value) else {
                throw Invalid("TONEARM_BUFFER_MS must be a whole number from 10 to 10000, not '\(buffer)'")
            }
            config.output.bufferMilliseconds = value
        }
        if let level = environment["TONEARM_LOG_LEVEL"] { config.logLevel = try Self.logLevel(level, "TONEARM_LOG_LEVEL") }
        return config
    }

    static func sampleType(_ text: String, _ source: String) throws -> SampleType? {
        if text == "auto" { return nil }
        guard let type = SampleType(rawValue: text) else {
            throw Invalid("\(source): format must be auto, s16, s32 or float, not '\(text)'")
        }
        return type
    }

    static func speed(_ value: Double, _ source: String) throws -> Double {
        guard value.isFinite, value > 0, value <= Bounds.fastestSpeed else {
            throw Invalid("\(source): speed must be a number above 0 and at most \(Int(Bounds.fastestSpeed))")
        }
        return value
    }

    package static func logLevel(_ text: String, _ source: String) throws -> Logger.Level {
        guard let level = Logger.Level(rawValue: text.lowercased()) else {
            throw Invalid(
                "\(source): log level must be one of \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")), not '\(text)'")
        }
        return level
    }
}
