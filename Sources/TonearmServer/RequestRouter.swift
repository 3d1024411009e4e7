import Foundation
import TonearmCore
import TonearmEngine
import TonearmPlayer

/// Maps JSON-RPC methods onto the player. Each method checks its params strictly: an unknown
/// field, a wrong type or an out-of-range number gets `invalidParams` naming it.
struct RequestRouter: Sendable {
    let player: Player
    static let version = "0.1.0"

    /// Answers a request that needs no waiting, on the caller's thread (the connection's event
    /// loop). Returns nil for the methods that wait for the engine: `load`, `seek`, `retry`.
    func answerNow(_ request: RPC.Request, session: ClientSession) -> Result<JSONValue, RPC.Failure>? {
        switch request.method {
        case "load", "seek", "retry": return nil
        default: return Self.catching { try immediate(request, session: session) }
        }
    }

    /// Answers a request that waits for the engine.
    func answerLater(_ request: RPC.Request) async -> Result<JSONValue, RPC.Failure> {
        do {
            return .success(try await waiting(request))
        } catch {
            return Self.failure(error)
        }
    }

    private static func catching(_ body: () throws -> JSONValue) -> Result<JSONValue, RPC.Failure> {
        do { return .success(try body()) } catch { return failure(error) }
    }

    private static func failure(_ error: any Error) -> Result<JSONValue, RPC.Failure> {
        switch error {
        case let failure as RPC.Failure: .failure(failure)
        case let error as PlayerError: .failure(ProtocolEncoding.failure(error))
        default: .failure(RPC.Failure(.internalError, "internal error: \(error)"))
        }
    }

    private func waiting(_ request: RPC.Request) async throws -> JSONValue {
        let params = Params(request.params, method: request.method)
        switch request.method {
        case "load":
            try params.allow(["url", "play", "start"])
            let url = try Self.mediaURL(params.requiredString("url"))
            let loaded = try await player.load(url, play: try params.bool("play") ?? false, start: try params.number("start") ?? 0)
            return ["state": ProtocolEncoding.state(loaded.state), "media": ProtocolEncoding.media(loaded.media)]
        case "seek":
            try params.allow(["position", "relative"])
            let position = try params.requiredNumber("position")
            let landed = try await player.seek(to: position, relative: try params.bool("relative") ?? false)
            return ["position": .number(landed.position), "state": ProtocolEncoding.state(landed.state)]
        case "retry":
            try params.allow([])
            let loaded = try await player.retry()
            return ["state": ProtocolEncoding.state(loaded.state), "media": ProtocolEncoding.media(loaded.media)]
        default:
            throw RPC.Failure(.internalError, "internal error: '\(request.method)' is not a waiting method")
        }
    }

    private func immediate(_ request: RPC.Request, session: ClientSession) throws -> JSONValue {
        let params = Params(request.params, method: request.method)
        switch request.method {
        case "ping":
            try params.allow([])
            return "pong"
        case "version":
            try params.allow([])
            return ["version": .string(Self.version), "libraries": .object(PlayerEngine.libraryVersions.mapValues(JSONValue.string))]
        case "status":
            try params.allow([])
            return ProtocolEncoding.status(player.status)
        case "play":
            try params.allow([])
            return changed(try player.play())
        case "pause":
            try params.allow([])
            return changed(try player.pause())
        case "stop":
            try params.allow([])
            return changed(try player.stop())
        case "subscribe":
            try params.allow(["events", "position_interval"])
            let kinds = try params.stringArray("events") ?? ["transition", "performance"]
            var subscription = Set<ClientSession.EventKind>()
            for kind in kinds {
                guard let parsed = ClientSession.EventKind(rawValue: kind) else {
                    throw RPC.Failure(.invalidParams, "invalid params: unknown event type '\(kind)' (transition, performance, position)")
                }
                subscription.insert(parsed)
            }
            let interval = try params.number("position_interval") ?? 1.0
            guard interval >= 0.05, interval <= 3600 else {
                throw RPC.Failure(.invalidParams, "invalid params: position_interval must be from 0.05 to 3600 seconds")
            }
            session.subscribe(to: subscription, positionInterval: interval)
            return ["subscribed": .array(subscription.map(\.rawValue).sorted().map(JSONValue.string)),
                    "state": ProtocolEncoding.state(player.state)]
        default:
            throw RPC.Failure(.methodNotFound, "method not found: '\(request.method)'",
                              data: ["methods": ["load", "play", "pause", "stop", "seek", "status", "retry",
                                                 "subscribe", "ping", "version"]])
        }
    }

    private func changed(_ transition: PlaybackTransition) -> JSONValue {
        ["changed": .bool(transition.didChangeState), "state": ProtocolEncoding.state(transition.to)]
    }

    /// An absolute path or a file:// URL. Relative paths are refused: the daemon's working
    /// directory is not the client's (tonearmctl makes paths absolute before sending).
    static func mediaURL(_ text: String) throws -> URL {
        if text.hasPrefix("/") { return URL(fileURLWithPath: text) }
        if let url = URL(string: text), url.scheme == "file" {
            guard !url.path.isEmpty else {
                throw RPC.Failure(.invalidParams, "invalid params: the file URL '\(text)' names no path, or its path is not valid UTF-8 once decoded")
            }
            return url
        }
        if let url = URL(string: text), let scheme = url.scheme, !scheme.isEmpty {
            throw RPC.Failure(.invalidParams, "invalid params: only local files are supported, not '\(scheme)' URLs")
        }
        throw RPC.Failure(.invalidParams, "invalid params: url must be an absolute path or a file:// URL, not '\(text)'")
    }
}

/// Typed, strict access to a request's params object.
private struct Params {
    let object: [String: JSONValue]
    let method: String

    init(_ value: JSONValue, method: String) {
        if case .object(let object) = value { self.object = object } else { self.object = [:] }
        self.method = method
    }

    func allow(_ keys: Set<String>) throws {
        if let unknown = object.keys.sorted().first(where: { !keys.contains($0) }) {
            throw RPC.Failure(.invalidParams, "invalid params: '\(method)' has no parameter '\(unknown)'")
        }
    }

    func requiredString(_ key: String) throws -> String {
        guard let value = object[key] else { throw RPC.Failure(.invalidParams, "invalid params: '\(key)' is required") }
        guard case .string(let text) = value, !text.isEmpty else {
            throw RPC.Failure(.invalidParams, "invalid params: '\(key)' must be a non-empty string")
        }
        return text
    }

    func requiredNumber(_ key: String) throws -> Double {
        guard let value = try number(key) else { throw RPC.Failure(.invalidParams, "invalid params: '\(key)' is required") }
        return value
    }

    func number(_ key: String) throws -> Double? {
        guard let value = object[key], value != .null else { return nil }
        guard case .number(let number) = value, number.isFinite, abs(number) < 1e9 else {
            throw RPC.Failure(.invalidParams, "invalid params: '\(key)' must be a number of seconds")
        }
        return number
    }

    func bool(_ key: String) throws -> Bool? {
        guard let value = object[key], value != .null else { return nil }
        guard case .bool(let flag) = value else { throw RPC.Failure(.invalidParams, "invalid params: '\(key)' must be true or false") }
        return flag
    }

    func stringArray(_ key: String) throws -> [String]? {
        guard let value = object[key], value != .null else { return nil }
        guard case .array(let items) = value else { throw RPC.Failure(.invalidParams, "invalid params: '\(key)' must be an array of strings") }
        return try items.map { item in
            guard case .string(let text) = item else { throw RPC.Failure(.invalidParams, "invalid params: '\(key)' must be an array of strings") }
            return text
        }
    }
}
