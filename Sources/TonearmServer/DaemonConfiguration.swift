import Foundation
import Logging
import TOMLKit
import TonearmFrontEnd
import TonearmLibrary
import TonearmMPD
import TonearmMedia
import TonearmPlayer
import TonearmUPnP
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
    /// The UPnP/DLNA renderer (`[upnp]`).
    package var upnp = UPnPSettings()
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
        // Each key is looked up in the schema, which applies it; the tables in the schema's order.
        for key in table.keys where !ConfigSchema.sections.contains(key) {
            guard let declared = ConfigSchema.byName[key] else { throw Invalid("\(source): unknown key '\(key)'") }
            try declared.apply(&config, table[key]!, source)
        }
        for section in ConfigSchema.sections {
            guard let value = table[section] else { continue }
            guard let entries = value.table else { throw Invalid("\(source): [\(section)] must be a table") }
            for key in entries.keys {
                guard let declared = ConfigSchema.byName["\(section).\(key)"] else {
                    throw Invalid("\(source): unknown key '\(section).\(key)'")
                }
                try declared.apply(&config, entries[key]!, source)
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
