import ArgumentParser
import Foundation
import TonearmMedia
import TonearmProtocol

// The play queue, its options, the volume and ReplayGain. Playback commands are in Tonearmctl.swift.

struct Add: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Add files to the queue (and play the first with --play).")
    @OptionGroup var options: ConnectionOptions
    @Argument(
        help:
            "Paths or file:// URLs; a relative path is a file in the current directory if there is one, else a path in the daemon's music directory. .m3u, .m3u8 and .pls playlists add their entries."
    )
    var paths: [String]
    @Option(help: "Queue position to insert at: 0 is the top (default: the end).", transform: NumberArgument.index)
    var position: Int?
    @Flag(help: "Play the first added item.") var play = false

    func run() async throws {
        var params: [String: JSONValue] = ["urls": .array(paths.map { .string(absolute($0)) })]
        if let position { params["position"] = .number(Double(position)) }
        if play { params["play"] = .bool(true) }
        try await options.run("add", .object(params)) { result in
            var lines: [String] = []
            if case .array(let items)? = result["items"] {
                lines = items.map { "\(Summary.whole($0["id"])) \($0["url"]?.stringValue ?? "")" }
            }
            if lines.isEmpty { lines.append("nothing added (queue version \(Summary.whole(result["version"])))") }
            if let state = result["state"] { lines.append(Summary.state(state)) }
            return lines.joined(separator: "\n")
        }
    }
}

struct Queue: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the queue: > marks the current item, + the next; then the queue version and options.")
    @OptionGroup var options: ConnectionOptions
    func run() async throws { try await options.run("queue") { Queue.describe($0) } }

    static func describe(_ result: JSONValue) -> String {
        guard case .array(let items)? = result["items"] else { return result.text }
        let current = result["current"] ?? .null
        let next = result["next"] ?? .null
        let ids = items.map { Summary.whole($0["id"]) }
        let titles = items.map(title)
        let idWidth = ids.map(\.count).max() ?? 0
        let titleWidth = titles.map(\.count).max() ?? 0
        var lines: [String] = []
        for (index, item) in items.enumerated() {
            let id = item["id"] ?? .null
            let marker = id == .null ? " " : id == current ? ">" : id == next ? "+" : " "
            let padded = String(repeating: " ", count: idWidth - ids[index].count) + ids[index]
            let title = titles[index] + String(repeating: " ", count: titleWidth - titles[index].count)
            lines.append("\(marker) \(padded)  \(title)  \(clock(item["duration"]?.doubleValue))")
        }
        if items.isEmpty { lines.append("(the queue is empty)") }
        lines.append("queue version \(Summary.whole(result["version"])) · \(Summary.options(result))")
        return lines.joined(separator: "\n")
    }

    /// "artist – title" when the title is known (the title alone without an artist), else the file name.
    static func title(_ item: JSONValue) -> String {
        if let title = item["title"]?.stringValue, !title.isEmpty {
            guard let artist = item["artist"]?.stringValue, !artist.isEmpty else { return title }
            return "\(artist) – \(title)"
        }
        let url = item["url"]?.stringValue ?? ""
        return url.split(separator: "/").last.map(String.init) ?? url
    }

    /// m:ss, rounded to the second; "-:--" when unknown.
    static func clock(_ seconds: Double?) -> String {
        guard let seconds, seconds.isFinite, seconds >= 0, seconds < 1e9 else { return "-:--" }
        let total = Int(seconds.rounded())
        return String(format: "%d:%02d", total / 60, total % 60)
    }
}

struct Remove: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Remove items from the queue (all or none: an unknown id removes nothing).")
    @OptionGroup var options: ConnectionOptions
    @Argument(help: "Queue item ids (see `tonearmctl queue`).", transform: NumberArgument.index) var ids: [Int]

    func run() async throws {
        let ids = self.ids
        try await options.run("remove", ["ids": .array(ids.map { .number(Double($0)) })]) {
            "removed \(ids.map(String.init).joined(separator: ", ")) (queue version \(Summary.whole($0["version"])))"
        }
    }
}

struct Move: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Move a queue item to another position.")
    @OptionGroup var options: ConnectionOptions
    @Argument(help: "Queue item id.", transform: NumberArgument.index) var id: Int
    @Argument(help: "Its new position: 0 is the top.", transform: NumberArgument.index) var position: Int

    func run() async throws {
        let id = self.id
        let position = self.position
        try await options.run("move", ["id": .number(Double(id)), "position": .number(Double(position))]) {
            "moved \(id) to position \(position) (queue version \(Summary.whole($0["version"])))"
        }
    }
}

struct Clear: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Empty the queue and stop.")
    @OptionGroup var options: ConnectionOptions
    func run() async throws {
        try await options.run("clear") { "queue cleared (version \(Summary.whole($0["version"]))) · \(Summary.state($0["state"]))" }
    }
}

enum OnOff: String, ExpressibleByArgument, CaseIterable {
    case on, off
}

struct QueueOptionsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "options", abstract: "Show or set the queue options (with none given: show them).")
    @OptionGroup var options: ConnectionOptions
    @Option(name: .customLong("repeat"), help: ArgumentHelp("At the end of the queue, start again from the top.", valueName: "on|off"))
    var repeatSwitch: OnOff?
    @Option(help: ArgumentHelp("Stop after the current item (with --repeat on: repeat it).", valueName: "on|off"))
    var single: OnOff?
    @Option(help: ArgumentHelp("Remove each item from the queue once it has played.", valueName: "on|off"))
    var consume: OnOff?
    @Option(help: ArgumentHelp("Play the queue in a shuffled order.", valueName: "on|off"))
    var random: OnOff?
    @Option(
        help: ArgumentHelp(
            "Overlap the end of an item and the start of the next, \(Bounds.text(Bounds.crossfadeSeconds)) (0: gapless).",
            valueName: "seconds"))
    var crossfade: Double?

    func run() async throws {
        var params: [String: JSONValue] = [:]
        for (key, value) in [("repeat", repeatSwitch), ("single", single), ("consume", consume), ("random", random)] {
            if let value { params[key] = .bool(value == .on) }
        }
        if let crossfade { params["crossfade"] = JSONValue(crossfade) }
        try await options.run("options", .object(params)) {
            "\(Summary.options($0)) (queue version \(Summary.whole($0["version"])))"
        }
    }
}

/// A volume argument: "70" sets the level, "+5" and "-5" change it.
enum VolumeChange: Sendable {
    case level(Int)
    case delta(Int)

    static func parse(_ text: String) throws -> VolumeChange {
        let number = try NumberArgument(text)
        if number.isSigned {
            guard let delta = number.integer, Bounds.volumeDelta.contains(delta) else {
                throw NumberArgument.Failure("a volume change must be a whole number from -100 to +100")
            }
            return .delta(delta)
        }
        guard let level = number.integer, Bounds.volume.contains(level) else {
            throw NumberArgument.Failure("the volume must be a whole number from \(Bounds.text(Bounds.volume)) (or +N / -N to change it)")
        }
        return .level(level)
    }
}

struct Volume: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show or set the volume, 0 to 100; +N or -N changes it (write -N after --).")
    @OptionGroup var options: ConnectionOptions
    @Argument(help: ArgumentHelp("Level: 70, +5, or -- -5 (none: show the volume).", valueName: "level"), transform: VolumeChange.parse)
    var change: VolumeChange?

    func run() async throws {
        let params: JSONValue =
            switch change {
            case .level(let level)?: ["level": .number(Double(level))]
            case .delta(let delta)?: ["delta": .number(Double(delta))]
            case nil: [:]
            }
        try await options.run("volume", params) { "volume \(Summary.whole($0["volume"]))" }
    }
}

enum GainMode: String, ExpressibleByArgument, CaseIterable {
    case off, track, album, auto, loudness
}

struct ReplayGain: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay-gain", abstract: "Show or set ReplayGain (with nothing given: show it).")
    @OptionGroup var options: ConnectionOptions
    @Argument(
        help: ArgumentHelp(
            """
            The mode; auto takes album gain for an item next to one from the same album in the queue, else \
            track gain, and levels untagged files by their measured loudness; loudness always takes the measured loudness.
            """,
            valueName: "mode"))
    var mode: GainMode?
    @Option(
        name: .customLong("preamp"), parsing: .unconditional,
        help: ArgumentHelp("Gain added to the ReplayGain or measured gain, in dB (\(Bounds.text(Bounds.preampDB))).", valueName: "db"),
        transform: NumberArgument.finite)
    var preamp: Double?

    func run() async throws {
        var params: [String: JSONValue] = [:]
        if let mode { params["mode"] = .string(mode.rawValue) }
        if let preamp { params["preamp_db"] = .number(preamp) }
        try await options.run("replay_gain", .object(params)) { Summary.replayGain($0) }
    }
}
