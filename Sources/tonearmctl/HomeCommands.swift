import ArgumentParser
import Foundation
import TonearmProtocol

/// `tonearmctl sleep 30m`, `sleep --at-end-of item`, `sleep --cancel`, `sleep` (show it).
struct Sleep: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Pause after a while, fading out (with nothing given: show the sleep timer).")
    @OptionGroup var options: ConnectionOptions
    @Argument(
        help: ArgumentHelp("How long from now: seconds, or with a unit (90s, 30m, 1h30m).", valueName: "duration"),
        transform: Sleep.seconds)
    var after: Double?
    @Option(
        name: .customLong("fade"), help: ArgumentHelp("Seconds of fade-out before the pause (default 10).", valueName: "seconds"),
        transform: NumberArgument.finite)
    var fade: Double?
    @Option(name: .customLong("at-end-of"), help: ArgumentHelp("Pause where the item or the queue ends instead.", valueName: "item|queue"))
    var atEndOf: String?
    @Flag(help: "Cancel the sleep timer.") var cancel = false

    func run() async throws {
        var params: [String: JSONValue] = [:]
        if let after { params["after_s"] = .number(after) }
        if let fade { params["fade_s"] = .number(fade) }
        if let atEndOf { params["at_end_of"] = .string(atEndOf) }
        if cancel { params["cancel"] = .bool(true) }
        if params.isEmpty {
            try await options.run("status") { Sleep.summary($0.member("sleep")) }
        } else {
            try await options.run("sleep", .object(params)) { Sleep.summary($0.member("sleep")) }
        }
    }

    static func summary(_ sleep: JSONValue?) -> String {
        switch sleep {
        case .object(let plan)?:
            if case .string(let end)? = plan["at_end_of"] { return "sleep: pauses at the end of the \(end)" }
            if case .string(let at)? = plan["at"] {
                let fade = plan["fade_s"].flatMap { if case .number(let n) = $0 { n } else { nil } } ?? 0
                return "sleep: pauses at \(at), fading out over \(String(format: "%g", fade)) s"
            }
            return "sleep: \(JSONValue.object(plan).text)"
        default:
            return "sleep: off"
        }
    }

    /// "90", "90s", "30m", "1h30m" → seconds.
    static func seconds(_ text: String) throws -> Double {
        if let plain = Double(text), plain.isFinite { return plain }
        var total = 0.0
        var number = ""
        for character in text {
            if character.isNumber || character == "." {
                number.append(character)
                continue
            }
            let unit: Double? =
                switch character {
                case "h": 3600
                case "m": 60
                case "s": 1
                default: nil
                }
            guard let unit, let value = Double(number) else {
                throw ValidationError("'\(text)' is not a duration (e.g. 90, 90s, 30m, 1h30m)")
            }
            total += value * unit
            number = ""
        }
        guard number.isEmpty, total > 0 else { throw ValidationError("'\(text)' is not a duration (e.g. 90, 90s, 30m, 1h30m)") }
        return total
    }
}

/// `tonearmctl alarms` (list), `alarms add 07:30 --days mon,fri --url X`, `alarms remove 3`.
struct Alarms: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List, add or remove alarms.", subcommands: [List.self, Add.self, Remove.self], defaultSubcommand: List.self)

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the alarms.")
        @OptionGroup var options: ConnectionOptions

        func run() async throws {
            try await options.run("alarms.list") { result in
                guard case .array(let alarms)? = result.member("alarms"), !alarms.isEmpty else { return "no alarms" }
                return alarms.map(Alarms.summary).joined(separator: "\n")
            }
        }
    }

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Add an alarm: at a local time, it plays a URL or the queue, fading in.")
        @OptionGroup var options: ConnectionOptions
        @Argument(help: ArgumentHelp("Local time, HH:MM or HH:MM:SS.", valueName: "time")) var time: String
        @Option(help: ArgumentHelp("Days, e.g. mon,tue,fri (default every day).", valueName: "days")) var days: String?
        @Option(help: ArgumentHelp("What it plays (default: the queue from its start).", valueName: "url")) var url: String?
        @Option(help: ArgumentHelp("Volume, 0 to 100.", valueName: "level")) var volume: Int?
        @Option(
            name: .customLong("fade-in"), help: ArgumentHelp("Seconds of fade-in (default 10).", valueName: "seconds"),
            transform: NumberArgument.finite)
        var fadeIn: Double?

        func run() async throws {
            var params: [String: JSONValue] = ["time": .string(time)]
            if let days { params["days"] = .array(days.split(separator: ",").map { .string(String($0)) }) }
            if let url {
                // A relative path is the caller's, not the daemon's working directory.
                params["url"] = .string(
                    url.contains("://") || url.hasPrefix("/")
                        ? url
                        : FileManager.default.currentDirectoryPath + "/" + url)
            } else {
                params["queue"] = .bool(true)
            }
            if let volume { params["volume"] = .number(Double(volume)) }
            if let fadeIn { params["fade_in_s"] = .number(fadeIn) }
            try await options.run("alarms.add", .object(params)) { Alarms.summary($0.member("alarm") ?? .null) }
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove an alarm.")
        @OptionGroup var options: ConnectionOptions
        @Argument(help: ArgumentHelp("Its id (see `tonearmctl alarms`).", valueName: "id")) var id: Int

        func run() async throws {
            try await options.run("alarms.remove", ["id": .number(Double(id))]) { "removed " + Alarms.summary($0.member("alarm") ?? .null) }
        }
    }

    /// "3  07:30 mon,fri  file:///…  volume 40, fade-in 30 s  next 2026-11-30T07:30:00+00:00"
    static func summary(_ alarm: JSONValue) -> String {
        guard case .object(let a) = alarm else { return alarm.text }
        func text(_ key: String) -> String? { if case .string(let s)? = a[key] { s } else { nil } }
        func number(_ key: String) -> Double? { if case .number(let n)? = a[key] { n } else { nil } }
        var days = "every day"
        if case .array(let list)? = a["days"], !list.isEmpty {
            days = list.compactMap { if case .string(let s) = $0 { s } else { nil } }.joined(separator: ",")
        }
        var line = "\(number("id").map { String(Int($0)) } ?? "?")  \(text("time") ?? "?") \(days)  \(text("url") ?? "the queue")"
        var settings: [String] = []
        if let volume = number("volume") { settings.append("volume \(Int(volume))") }
        if let fade = number("fade_in_s") { settings.append("fade-in \(String(format: "%g", fade)) s") }
        if !settings.isEmpty { line += "  " + settings.joined(separator: ", ") }
        if let next = text("next_at") { line += "  next \(next)" }
        return line
    }
}

/// `tonearmctl announce chime.wav --volume 70`.
struct Announce: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Play a clip over what plays (faded out, or lowered with --duck), then come back to it exactly.")
    @OptionGroup var options: ConnectionOptions
    @Argument(help: ArgumentHelp("A file or URL.", valueName: "url")) var url: String
    @Option(help: ArgumentHelp("The clip's volume, 0 to 100 (default the player's).", valueName: "level")) var volume: Int?
    @Flag(help: "Play it over the music, lowered to announce.duck_level, instead of fading the music out.") var duck = false

    func run() async throws {
        var params: [String: JSONValue] = [
            "url": .string(url.contains("://") || url.hasPrefix("/") ? url : FileManager.default.currentDirectoryPath + "/" + url)
        ]
        if let volume { params["volume"] = .number(Double(volume)) }
        if duck { params["duck"] = .bool(true) }
        try await options.run("announce", .object(params)) { result in
            guard case .number(let place)? = result.member("place"), place > 0 else { return "announcing" }
            return "announcing after \(Int(place)) other\(place == 1 ? "" : "s")"
        }
    }
}
