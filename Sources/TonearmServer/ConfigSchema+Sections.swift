import Foundation
import TOMLKit
import TonearmFrontEnd
import TonearmMPD
import TonearmMedia
import TonearmUPnP
import TonearmWeb

extension ConfigSchema {
    static let input: [ConfigKey] = [
        ConfigKey("input.roots") { config, value, source in
            guard let array = value.array else { throw Invalid("\(source): input.roots must be an array of paths") }
            let roots = try array.map { element -> String in
                guard let path = element.string, path.hasPrefix("/") else {
                    throw Invalid("\(source): input.roots must hold absolute paths")
                }
                return path
            }
            config.security.roots = MediaRoots(roots)
            config.input.roots = config.security.roots.paths
        },
        ConfigKey("input.protocols") { config, value, source in
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
        },
        ConfigKey("input.prebuffer_ms") { config, value, source in
            config.input.prebufferSeconds = Double(try integer(value, "input.prebuffer_ms", source, 0...30_000)) / 1000
        },
        ConfigKey("input.timeout_ms") { config, value, source in
            config.input.timeoutSeconds = Double(try integer(value, "input.timeout_ms", source, 100...600_000)) / 1000
        },
        ConfigKey("input.reconnect_for_s") { config, value, source in
            config.input.reconnectForSeconds = Double(try integer(value, "input.reconnect_for_s", source, 0...31_536_000))
        },
        .bool("input.tls_verify", \.input.tlsVerify),
        ConfigKey("input.ca_file") { config, value, source in
            let path = try string(value, "input.ca_file", source)
            guard path.hasPrefix("/") else { throw Invalid("\(source): input.ca_file must be an absolute path to a PEM file") }
            guard FileManager.default.isReadableFile(atPath: path) else {
                throw Invalid("\(source): input.ca_file: cannot read \(path)")
            }
            config.input.caFile = path
        },
    ]

    static let state: [ConfigKey] = [
        ConfigKey("state.directory", flag: "--state-directory") { config, value, source in
            let directory = try string(value, "state.directory", source)
            guard directory.isEmpty || directory.hasPrefix("/") else {
                throw Invalid("\(source): state.directory must be an absolute path, or \"\" for the default")
            }
            config.stateDirectory = directory.isEmpty ? nil : directory
        },
        .choice("state.resume", "paused, playing or off", \.resume),
        ConfigKey("state.save_interval_s") { config, value, source in
            let seconds = try number(value, "state.save_interval_s", source)
            guard seconds.isFinite, (0.1...3600).contains(seconds) else {
                throw Invalid("\(source): state.save_interval_s must be a number from 0.1 to 3600")
            }
            config.saveIntervalSeconds = seconds
        },
    ]

    static let library: [ConfigKey] = [
        ConfigKey("library.music_directory") { config, value, source in
            config.library.musicDirectory = try musicDirectory(value, "library.music_directory", source)
        },
        .bool("library.scan_on_start", \.library.scanOnStart),
        .bool("library.follow_symlinks", \.library.followSymlinks),
        ConfigKey("library.scan_threads") { config, value, source in
            let threads = try integer(value, "library.scan_threads", source, 0...64)
            config.library.scanThreads = threads == 0 ? ProcessInfo.processInfo.activeProcessorCount : threads
        },
        .bool("library.watch", \.library.watch),
        .bool("library.measure_loudness", \.library.measureLoudness),
        ConfigKey("library.rescan_interval_s") { config, value, source in
            let seconds = try number(value, "library.rescan_interval_s", source)
            guard seconds.isFinite, seconds == 0 || (1...604_800).contains(seconds) else {
                throw Invalid("\(source): library.rescan_interval_s must be 0 (never) or a number of seconds from 1 to 604800")
            }
            config.library.rescanIntervalSeconds = seconds
        },
        ConfigKey("library.playlist_directory") { config, value, source in
            let path = try string(value, "library.playlist_directory", source)
            guard path.isEmpty || path.hasPrefix("/") else {
                throw Invalid(
                    "\(source): library.playlist_directory must be an absolute path, or \"\" for playlists/ in the state directory")
            }
            config.library.playlistDirectory = path.isEmpty ? nil : path
        },
    ]

    static let mpd: [ConfigKey] = [
        .bool("mpd.enabled", \.mpd.enabled),
        ConfigKey("mpd.socket") { config, value, source in
            let path = try string(value, "mpd.socket", source)
            guard path.isEmpty || path.hasPrefix("/") else {
                throw Invalid("\(source): mpd.socket must be an absolute path, or \"\" for mpd.sock beside the control socket")
            }
            config.mpd.socket = path.isEmpty ? nil : path
        },
        ConfigKey("mpd.bind") { config, value, source in
            let text = try string(value, "mpd.bind", source)
            guard !text.isEmpty else {
                config.mpd.bind = nil
                return
            }
            guard let address = MPDSettings.TCPAddress(text) else {
                throw Invalid("\(source): mpd.bind must be \"host:port\" such as \"127.0.0.1:6600\", not '\(text)'")
            }
            config.mpd.bind = address
        },
        ConfigKey("mpd.password") { config, value, source in
            let text = try string(value, "mpd.password", source)
            guard !text.contains(where: \.isNewline) else { throw Invalid("\(source): mpd.password cannot hold a line break") }
            config.mpd.password = text.isEmpty ? nil : text
        },
        // Moved to library.music_directory; still read, with a notice.
        ConfigKey("mpd.music_directory") { config, value, source in
            config.library.musicDirectory = try musicDirectory(value, "mpd.music_directory", source)
            config.notices.append("\(source): mpd.music_directory is now library.music_directory; the old key still works")
        },
        .integer("mpd.max_clients", 1...65_536, \.mpd.maxClients),
        .clientLimit("mpd.max_output_buffer_size", \.mpd.limits),
        .clientLimit("mpd.connection_timeout", \.mpd.limits),
    ]

    static let http: [ConfigKey] = [
        .bool("http.enabled", \.http.enabled),
        ConfigKey("http.bind", flag: "--http") { config, value, source in
            let text = try string(value, "http.bind", source)
            guard let address = TCPAddress(text) else {
                throw Invalid("\(source): http.bind must be \"host:port\" such as \"127.0.0.1:6680\", not '\(text)'")
            }
            config.http.bind = address
        },
        ConfigKey("http.password") { config, value, source in
            let text = try string(value, "http.password", source)
            config.http.password = text.isEmpty ? nil : text
        },
        ConfigKey("http.read_password") { config, value, source in
            let text = try string(value, "http.read_password", source)
            config.http.readPassword = text.isEmpty ? nil : text
        },
        ConfigKey("http.allowed_hosts") { config, value, source in
            guard let array = value.array else { throw Invalid("\(source): http.allowed_hosts must be an array of host names") }
            config.http.allowedHosts = try array.map { element -> String in
                guard let name = element.string, !name.isEmpty, name.utf8.count <= 253,
                    name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "-" || $0 == "_") })
                else {
                    throw Invalid("\(source): http.allowed_hosts must hold host names such as \"jukebox.example.net\"")
                }
                return name.lowercased()
            }
        },
        .integer("http.max_clients", 1...65_536, \.http.maxClients),
    ]

    static let upnp: [ConfigKey] = [
        .bool("upnp.enabled", \.upnp.enabled),
        ConfigKey("upnp.name") { config, value, source in
            let text = try string(value, "upnp.name", source)
            guard text.utf8.count <= 200 else { throw Invalid("\(source): upnp.name is at most 200 bytes") }
            config.upnp.name = text.isEmpty ? nil : text
        },
        ConfigKey("upnp.interfaces") { config, value, source in
            guard let array = value.array else { throw Invalid("\(source): upnp.interfaces must be an array of interface names") }
            let names = try array.map { element -> String in
                guard let name = element.string, !name.isEmpty, name.utf8.count < 16 else {
                    throw Invalid("\(source): upnp.interfaces must hold interface names such as \"eth0\"")
                }
                return name
            }
            config.upnp.interfaces = names.isEmpty ? nil : names
        },
        .integer("upnp.port", 0...65_535, \.upnp.port),
        ConfigKey("upnp.release_after_s") { config, value, source in
            config.upnp.releaseAfterSeconds = Double(try integer(value, "upnp.release_after_s", source, 1...604_800))
        },
        ConfigKey("upnp.protocols") { config, value, source in
            guard let array = value.array else { throw Invalid("\(source): upnp.protocols must be an array of \"http\" or \"https\"") }
            config.upnp.protocols = try array.map { element -> String in
                guard let name = element.string?.lowercased(), ["http", "https"].contains(name) else {
                    throw Invalid("\(source): upnp.protocols: a cast may open http and https URLs only, not '\(element)'")
                }
                return name
            }
        },
        .integer("upnp.ssdp_port", 1...65_535, \.upnp.ssdpPort),
        .integer("upnp.max_subscribers", 1...1024, \.upnp.maxSubscribers),
    ]

    static let crossfade: [ConfigKey] = [
        .bool("crossfade.skip_same_album", \.crossfade.skipSameAlbum),
        ConfigKey("crossfade.manual_ms") { config, value, source in
            config.crossfade.manualSeconds = Double(try integer(value, "crossfade.manual_ms", source, 0...5000)) / 1000
        },
    ]

    static let announce: [ConfigKey] = [
        .integer("announce.duck_level", Bounds.volume, \.announcements.duckLevel)
    ]

    static let log: [ConfigKey] = [
        ConfigKey("log.level", environment: "TONEARM_LOG_LEVEL", flag: "--log-level") { config, value, source in
            config.logLevel = try DaemonConfiguration.logLevel(string(value, "log.level", source), source)
        }
    ]
}
