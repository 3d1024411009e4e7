import ArgumentParser
import Foundation
import TOMLKit
import TonearmProtocol

@main
struct Tonearmctl: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tonearmctl",
        abstract: "Control a running tonearmd.",
        version: TonearmVersion.string,
        subcommands: [
            Load.self, Add.self, Queue.self, Play.self, Pause.self, Stop.self, Next.self, Previous.self,
            Seek.self, Remove.self, Move.self, Clear.self, QueueOptionsCommand.self, Volume.self,
            ReplayGain.self, Sleep.self, Alarms.self, Announce.self, Status.self, Retry.self, Watch.self, Search.self, Ls.self, Update.self,
            Ping.self,
            Version.self,
        ])
}

struct ConnectionOptions: ParsableArguments {
    @Option(help: "Control socket path (else TONEARM_SOCKET, else the config's socket, else the default).")
    var socket: String?

    @Option(help: "tonearmd config file whose socket to use.")
    var config: String?

    @Flag(help: "Print the daemon's JSON answer instead of a summary.")
    var json = false

    func socketPath() throws -> String {
        SocketPath.resolve(
            explicit: socket, environment: ProcessInfo.processInfo.environment,
            configured: try config.flatMap(Self.configuredSocket))
    }

    /// The `socket` a daemon's config file names (the only key a client needs from it).
    static func configuredSocket(_ path: String) throws -> String? {
        guard let text = FileManager.default.contents(atPath: path).map({ String(decoding: $0, as: UTF8.self) }) else {
            throw ValidationError("cannot read config file \(path)")
        }
        let table: TOMLTable
        do { table = try TOMLTable(string: text) } catch {
            throw ValidationError("\(path): not valid TOML: \(error)")
        }
        guard let value = table["socket"] else { return nil }
        guard let socket = value.string else { throw ValidationError("\(path): socket must be a string") }
        return socket
    }

    /// Sends one request and prints its answer; a daemon error exits non-zero with its message.
    func run(_ method: String, _ params: JSONValue = [:], summary: @escaping @Sendable (JSONValue) -> String) async throws {
        let client = ControlClient(socketPath: try socketPath())
        let json = self.json
        do {
            let result = try await client.withConnection { try await $0.call(method, params) }
            print(json ? result.text : summary(result))
        } catch let error as ControlClient.ResponseError {
            if json {
                print(
                    JSONValue.object(["code": .number(Double(error.code)), "message": .string(error.message), "data": error.data ?? .null])
                        .text)
            } else {
                printError("error: \(error.message)")
            }
            throw ExitCode.failure
        } catch let error as ControlClient.ConnectionError {
            printError("error: \(error.description)")
            throw ExitCode(2)
        }
    }
}

func printError(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}

/// A path as the daemon should read it: a file in the current directory by its absolute path
/// (the daemon's working directory is not ours); anything else as given (an absolute path, a
/// URL, or a path in the daemon's music directory).
func absolute(_ path: String) -> String {
    guard !path.contains("://"), !path.hasPrefix("/") else { return path }
    let here = URL(fileURLWithPath: path, relativeTo: URL(fileURLWithPath: FileManager.default.currentDirectoryPath)).standardizedFileURL
        .path
    return FileManager.default.fileExists(atPath: here) ? here : path
}

enum Summary {
    static func state(_ state: JSONValue?) -> String {
        guard let state, let name = state["state"]?.stringValue else { return "unknown" }
        switch name {
        case "failed":
            return "failed: \(state["error"]?["message"]?.stringValue ?? "")"
        case "seeking":
            return "seeking to \(seconds(state["target"]?.doubleValue)) (then \(state["resume"]?.stringValue ?? ""))"
        case "loading":
            return "loading \(state["url"]?.stringValue ?? "")"
        default:
            return name
        }
    }

    static func seconds(_ value: Double?) -> String {
        guard let value else { return "--:--" }
        let total = Int(value)
        return String(format: "%d:%02d.%01d", total / 60, total % 60, Int((value - Double(total)) * 10))
    }

    static func media(_ media: JSONValue?) -> String {
        guard let media, media != .null else { return "" }
        var parts: [String] = []
        let tags = media["tags"]
        let title = [tags?["artist"]?.stringValue, tags?["title"]?.stringValue].compactMap { $0 }.joined(separator: " – ")
        parts.append(title.isEmpty ? (media["url"]?.stringValue ?? "") : title)
        parts.append(
            "\(media["codec"]?.stringValue ?? "?") \(Int(media["sample_rate"]?.doubleValue ?? 0)) Hz \(Int(media["channels"]?.doubleValue ?? 0)) ch"
        )
        parts.append(seconds(media["duration"]?.doubleValue))
        return parts.joined(separator: " · ")
    }

    static func changed(_ result: JSONValue) -> String {
        let now = state(result["state"])
        return result["changed"]?.boolValue == false ? "\(now) (unchanged)" : now
    }

    /// After a move in the queue (`next`, `previous`, `play ID`): the state, the item's id and its
    /// media; the state alone when no item opened (`next` at the end of the queue stops).
    static func jump(_ result: JSONValue) -> String {
        let now = state(result["state"])
        let media = self.media(result["media"])
        guard !media.isEmpty else { return now }
        guard let current = result["current"], current != .null else { return "\(now): \(media)" }
        return "\(now): id \(whole(current)) · \(media)"
    }

    /// A whole number from the daemon (an id, a volume), or "–" for none.
    static func whole(_ value: JSONValue?) -> String {
        guard let number = value?.doubleValue, number.isFinite, abs(number) < 1e15 else { return "–" }
        return String(Int(number))
    }

    static func onOff(_ value: JSONValue?) -> String {
        switch value?.boolValue {
        case true?: "on"
        case false?: "off"
        case nil: "?"
        }
    }

    /// The queue options of a `queue` or `options` answer.
    static func options(_ result: JSONValue) -> String {
        let crossfade = result["crossfade"]?.doubleValue ?? 0
        return
            (["repeat", "single", "consume", "random"].map { "\($0) \(onOff(result[$0]))" }
            + [crossfade > 0 ? "crossfade \(String(format: "%g", crossfade)) s" : "crossfade off"]).joined(separator: " · ")
    }

    /// The current item's gain: how much, from what, and its measured loudness when known.
    static func loudness(_ value: JSONValue) -> String {
        let gain = value["gain_db"]?.doubleValue ?? 0
        var line = "gain \(String(format: "%+.1f", gain)) dB (\(value["source"]?.stringValue ?? "?"))"
        if let integrated = value["integrated_lufs"]?.doubleValue {
            line += " · \(String(format: "%.1f", integrated)) LUFS"
            if let peak = value["peak_dbtp"]?.doubleValue { line += ", peak \(String(format: "%.1f", peak)) dBTP" }
        }
        return line
    }

    static func replayGain(_ value: JSONValue?) -> String {
        let mode = value?["mode"]?.stringValue ?? "?"
        guard let preamp = value?["preamp_db"]?.doubleValue else { return "replay gain \(mode)" }
        return "replay gain \(mode) · preamp \(String(format: "%+.1f", preamp)) dB"
    }
}

struct Load: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Load a media file or stream (and play it with --play).")
    @OptionGroup var options: ConnectionOptions
    @Argument(
        help:
            "Path, file:// URL, or http(s):// URL; a relative path is a file in the current directory if there is one, else a path in the daemon's music directory."
    ) var path: String
    @Flag(help: "Start playing once loaded.") var play = false
    @Option(help: "Start position in seconds.", transform: NumberArgument.nonNegativeSeconds) var start: Double?

    func run() async throws {
        var params: [String: JSONValue] = ["url": .string(absolute(path)), "play": .bool(play)]
        if let start { params["start"] = .number(start) }
        try await options.run("load", .object(params)) { "\(Summary.state($0["state"])): \(Summary.media($0["media"]))" }
    }
}

/// A command that sends one request with no params and prints a summary of the answer.
protocol MethodCommand: AsyncParsableCommand {
    static var method: String { get }
    var options: ConnectionOptions { get }
    static func summarize(_ result: JSONValue) -> String
}

extension MethodCommand {
    func run() async throws { try await options.run(Self.method) { Self.summarize($0) } }
}

/// A state-changing command: prints the new state.
protocol StateCommand: MethodCommand {}

extension StateCommand {
    static func summarize(_ result: JSONValue) -> String { Summary.changed(result) }
}

struct Play: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Play (after the end: from the beginning); with an id, jump to that queue item and play it.")
    @OptionGroup var options: ConnectionOptions
    @Argument(help: "Queue item id (see `tonearmctl queue`).", transform: NumberArgument.index) var id: Int?

    func run() async throws {
        let params: JSONValue = id.map { ["id": .number(Double($0))] } ?? [:]
        try await options.run("play", params) { result in
            // A jump (an id, or starting the queue from idle) answers with the item's media.
            if let media = result["media"], media != .null { return Summary.jump(result) }
            return Summary.changed(result)
        }
    }
}

/// A command that moves through the queue: prints where it landed.
protocol JumpCommand: MethodCommand {}

extension JumpCommand {
    static func summarize(_ result: JSONValue) -> String { Summary.jump(result) }
}

struct Next: JumpCommand {
    static let configuration = CommandConfiguration(
        abstract: "Go to the next queue item: it plays if playing, else it is loaded, ready (at the end: stop).")
    static let method = "next"
    @OptionGroup var options: ConnectionOptions
}

struct Previous: JumpCommand {
    static let configuration = CommandConfiguration(
        abstract: "Go to the previous queue item: it plays if playing, else it is loaded, ready (at the start: the current one again).")
    static let method = "previous"
    @OptionGroup var options: ConnectionOptions
}

struct Pause: StateCommand {
    static let configuration = CommandConfiguration(abstract: "Pause.")
    static let method = "pause"
    @OptionGroup var options: ConnectionOptions
}

struct Stop: StateCommand {
    static let configuration = CommandConfiguration(abstract: "Stop and release the file and the device.")
    static let method = "stop"
    @OptionGroup var options: ConnectionOptions
}

struct Retry: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Load the media that failed again (recoverable failures).")
    @OptionGroup var options: ConnectionOptions
    func run() async throws { try await options.run("retry") { "\(Summary.state($0["state"])): \(Summary.media($0["media"]))" } }
}

struct Seek: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Seek to a position in seconds; +N or -N seeks relative (write -N after --).")
    @OptionGroup var options: ConnectionOptions
    @Argument(help: "Seconds: 30, +10, or -- -10.", transform: NumberArgument.seconds) var position: NumberArgument

    func run() async throws {
        try await options.run("seek", ["position": .number(position.value), "relative": .bool(position.isSigned)]) {
            "\(Summary.state($0["state"])) at \(Summary.seconds($0["position"]?.doubleValue))"
        }
    }
}

struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show state, position and media.")
    @OptionGroup var options: ConnectionOptions
    func run() async throws {
        try await options.run("status") { result in
            var lines = [
                "\(Summary.state(result["state"]))  \(Summary.seconds(result["position"]?.doubleValue)) / \(Summary.seconds(result["duration"]?.doubleValue))"
            ]
            let media = Summary.media(result["media"])
            if !media.isEmpty { lines.append(media) }
            if let interruption = result["interruption"]?.stringValue { lines.append("interrupted: \(interruption)") }
            if result["source"]?.stringValue == "upnp" {
                // A cast holds the room; the queue is set aside until it ends.
                lines.append("source: upnp cast from \(result["source_address"]?.stringValue ?? "?") (the queue is set aside)")
            }
            lines.append("output: \(result["output"]?["device"]?.stringValue ?? "?")")
            if result["volume"] != nil {
                var queue = "current \(Summary.whole(result["current"])) · next \(Summary.whole(result["next"]))"
                queue += " · volume \(Summary.whole(result["volume"])) · \(Summary.replayGain(result["replay_gain"]))"
                lines.append(queue)
            }
            if let loudness = result["loudness"] { lines.append(Summary.loudness(loudness)) }
            return lines.joined(separator: "\n")
        }
    }
}

struct Ping: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Check that the daemon answers.")
    @OptionGroup var options: ConnectionOptions
    func run() async throws { try await options.run("ping") { $0.stringValue ?? $0.text } }
}

struct Version: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Show the daemon's and its libraries' versions.")
    @OptionGroup var options: ConnectionOptions
    func run() async throws {
        try await options.run("version") { result in
            let libraries =
                result["libraries"].flatMap { value -> String? in
                    guard case .object(let object) = value else { return nil }
                    return object.keys.sorted().map { "\($0) \(object[$0]?.stringValue ?? "")" }.joined(separator: ", ")
                } ?? ""
            return "tonearmd \(result["version"]?.stringValue ?? "?") (\(libraries))"
        }
    }
}

struct Watch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print events as they come (Ctrl-C to stop).")
    @OptionGroup var options: ConnectionOptions
    @Option(help: "Also print the position every N seconds while playing.", transform: NumberArgument.finite)
    var positionInterval: Double?

    func run() async throws {
        var events: [JSONValue] = ["transition", "performance"]
        var params: [String: JSONValue] = [:]
        if let positionInterval {
            events.append("position")
            params["position_interval"] = .number(positionInterval)
        }
        params["events"] = .array(events)
        let client = ControlClient(socketPath: try options.socketPath())
        let json = options.json
        let request = JSONValue.object(params)
        do {
            try await client.withConnection { connection in
                _ = try await connection.call("subscribe", request)
                while let message = try await connection.nextMessage() {
                    guard let event = message["params"] else { continue }
                    // Unbuffered, so a pipe sees each event as it happens.
                    FileHandle.standardOutput.write(Data(((json ? event.text : Watch.describe(event)) + "\n").utf8))
                }
            }
        } catch let error as ControlClient.ConnectionError {
            printError("error: \(error.description)")
            throw ExitCode(2)
        }
    }

    static func describe(_ event: JSONValue) -> String {
        switch event["type"]?.stringValue {
        case "transition":
            return "\(Summary.state(event["from"])) → \(Summary.state(event["to"])) (\(event["action"]?["name"]?.stringValue ?? ""))"
        case "performance":
            var text = event["event"]?.stringValue ?? ""
            if let latency = event["latency"]?.doubleValue { text += String(format: " %.1f ms", latency * 1000) }
            if let duration = event["duration"]?.doubleValue { text += String(format: " %.1f ms", duration * 1000) }
            if let reason = event["reason"]?.stringValue { text += ": \(reason)" }
            if let resumed = event["resumed"], resumed == .bool(false) { text += " (stays paused)" }
            return text
        case "position":
            return "position \(Summary.seconds(event["position"]?.doubleValue)) / \(Summary.seconds(event["duration"]?.doubleValue))"
        default:
            return event.text
        }
    }
}
