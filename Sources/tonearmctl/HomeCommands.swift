import ArgumentParser
import Foundation
import TonearmProtocol

/// `tonearmctl sleep 30m`, `sleep --at-end-of item`, `sleep --cancel`, `sleep` (show it).
struct Sleep: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Pause after a while, fading out (with nothing given: show the sleep timer).")
    @OptionGroup var options: ConnectionOptions
    @Argument(help: ArgumentHelp("How long from now: seconds, or with a unit (90s, 30m, 1h30m).", valueName: "duration"),
              transform: Sleep.seconds)
    var after: Double?
    @Option(name: .customLong("fade"), help: ArgumentHelp("Seconds of fade-out before the pause (default 10).", valueName: "seconds"),
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
        var total = 0.0, number = ""
        for character in text {
            if character.isNumber || character == "." {
                number.append(character)
                continue
            }
            let unit: Double? = switch character { case "h": 3600; case "m": 60; case "s": 1; default: nil }
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
