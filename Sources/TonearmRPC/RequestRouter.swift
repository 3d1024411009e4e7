import Foundation
import NIOCore
import TonearmCore
import TonearmFrontEnd
import TonearmLibrary
import TonearmMedia
import TonearmPlayer
import TonearmProtocol

/// Maps JSON-RPC methods onto the player. Each method checks its params strictly: an unknown
/// field, a wrong type or an out-of-range number gets `invalidParams` naming it.
struct RequestRouter: Sendable {
    let player: Player
    var sources = SourcePolicy()
    /// Where a long queue's listing is encoded, off the event loop (and library reads run).
    var longReplies: LongReplies
    /// The music library, if there is one (`library.*`, relative URIs in `add` and `load`).
    var library: Library?
    /// The stored playlists (`playlist.*`), if there are.
    var playlists: PlaylistStore?
    /// `status`, encoded once per change of the player's status.
    let statusEncoding = EncodedOnce<PlayerStatus>()
    static let version = TonearmVersion.string

    /// Answers a request that needs no waiting, on the caller's thread (the connection's event
    /// loop): what the method table says of it (known, allowed to this client, its params), then
    /// the answer. Returns nil for a request that waits for the engine (`answerLater`).
    func answerNow(_ request: RPC.Request, session: ClientSession) -> Result<JSONValue, RPC.Failure>? {
        guard let method = RPCMethods.table[request.method] else {
            return .failure(RPC.Failure(.methodNotFound, "method not found: '\(request.method)'",
                                        data: ["methods": .array(RPCMethods.names.map(JSONValue.string))]))
        }
        if session.access == .read, method.access == .control {
            session.logRefusal(method: request.method)
            return .failure(RPC.Failure(.permissionDenied, "permission denied: '\(request.method)' needs control access; "
                                        + "this client may only read (control.read_gids)"))
        }
        if let refusal = Self.catchingFailure({ try Params(request.params, method: request.method).allow(method.params) }) {
            return .failure(refusal)
        }
        if method.answersLater(request, player) { return nil }
        return Self.catching { try immediate(request, session: session) }
    }

    /// Answers a request that waits for the engine.
    func answerLater(_ request: RPC.Request, session: ClientSession) async -> Result<JSONValue, RPC.Failure> {
        do {
            return .success(try await waiting(request, session: session))
        } catch {
            return Self.failure(error)
        }
    }

    private static func catchingFailure(_ body: () throws -> Void) -> RPC.Failure? {
        do { try body() } catch {
            if case .failure(let failure) = failure(error) { return failure }
        }
        return nil
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

    private func waiting(_ request: RPC.Request, session: ClientSession) async throws -> JSONValue {
        let params = Params(request.params, method: request.method)
        switch request.method {
        case "load":
            let url = try sourceURL(params.requiredString("url"))
            try sources.check(url)
            let loaded = try await player.load(url, play: try params.bool("play") ?? false, start: try params.number("start") ?? 0)
            return ["state": ProtocolEncoding.state(loaded.state), "media": ProtocolEncoding.media(loaded.media)]
        case "seek":
            // Any finite number: the player clamps it to [0, duration].
            let position = try params.requiredNumber("position", bounded: false)
            let landed = try await player.seek(to: position, relative: try params.bool("relative") ?? false)
            return ["position": .number(landed.position), "state": ProtocolEncoding.state(landed.state)]
        case "retry":
            let loaded = try await player.retry()
            return ["state": ProtocolEncoding.state(loaded.state), "media": ProtocolEncoding.media(loaded.media)]
        case "play":
            let played = try await player.play(id: try params.integer("id"))
            var answer: [String: JSONValue] = ["state": ProtocolEncoding.state(played.state)]
            answer["changed"] = .bool(played.transition?.didChangeState ?? true)
            if played.transition == nil { answer["media"] = ProtocolEncoding.media(played.media) }
            answer["current"] = JSONValue(player.status.current)
            return .object(answer)
        case "pause":
            return changed(try await player.pauseWhenHeard())
        case "next", "previous":
            let moved = request.method == "next" ? try await player.next() : try await player.previous()
            return ["state": ProtocolEncoding.state(moved.state), "media": ProtocolEncoding.media(moved.media),
                    "current": JSONValue(player.status.current)]
        case "add":
            return try await addAndPlay(params, session: session)
        case "alarms.add", "alarms.remove":
            return try await alarmChange(request.method, params)
        case _ where request.method.hasPrefix("playlist."):
            return try await playlistAnswer(request, session: session)
        case _ where request.method.hasPrefix("library."):
            return try await libraryAnswer(request, for: session.peer)
        case "queue":
            // A long queue: encoded off the event loop, which goes on serving the other clients.
            return await longReplies.encode {
                var bytes = ByteBuffer()
                JSONCoding.serialize(queueListing(), into: &bytes)
                return .encoded(bytes)
            }
        case "loudness":
            let ids = params.object["ids"] == nil ? nil : try params.requiredIntegerArray("ids")
            return await longReplies.encode {
                var bytes = ByteBuffer()
                JSONCoding.serialize(loudnessListing(ids), into: &bytes)
                return .encoded(bytes)
            }
        default:
            throw RPC.Failure(.internalError, "internal error: '\(request.method)' is not a waiting method")
        }
    }

    private func queueListing() -> JSONValue {
        ProtocolEncoding.queue(player.queue, next: player.status.next, tags: player.tags(for:), duration: player.duration(of:))
    }

    /// The measured loudness of the queue's items `ids` (all when nil): null while not known.
    private func loudnessListing(_ ids: [Int]?) -> JSONValue {
        let wanted = ids.map(Set.init)
        let items = player.queue.items.filter { wanted?.contains($0.id) ?? true }
        return ["items": .array(items.map { item in
            ["id": JSONValue(item.id), "loudness": player.loudness(of: item.url).map(ProtocolEncoding.loudness) ?? .null]
        })]
    }

    private func immediate(_ request: RPC.Request, session: ClientSession) throws -> JSONValue {
        let params = Params(request.params, method: request.method)
        switch request.method {
        case "ping":
            return "pong"
        case "version":
            return ["version": .string(Self.version), "libraries": .object(Player.libraryVersions.mapValues(JSONValue.string))]
        case "status":
            return .encoded(statusEncoding.bytes(for: player.status) { status in
                var bytes = ByteBuffer()
                JSONCoding.serialize(ProtocolEncoding.status(status), into: &bytes)
                return bytes
            })
        case "play":
            return changed(try player.play())
        case "add":
            return try add(params, for: session.peer).answer
        case "queue":
            return queueListing()
        case "loudness":
            return loudnessListing(params.object["ids"] == nil ? nil : try params.requiredIntegerArray("ids"))
        case "remove":
            let ids = try params.requiredIntegerArray("ids")
            return ["version": JSONValue(try player.remove(ids: ids))]
        case "move":
            let id = try params.requiredInteger("id")
            return ["version": JSONValue(try player.move(id: id, to: try params.requiredInteger("position")))]
        case "clear":
            return ["version": JSONValue(player.clear()), "state": ProtocolEncoding.state(player.state)]
        case "options":
            let repeatFlag = try params.bool("repeat"), single = try params.bool("single")
            let consume = try params.bool("consume"), random = try params.bool("random")
            let crossfade = try params.number("crossfade")
            if let crossfade, !(0...QueueOptions.longestCrossfade).contains(crossfade) {
                throw RPC.Failure(.invalidParams, "invalid params: 'crossfade' must be a number of seconds from 0 to 15")
            }
            let options = player.setOptions { options in
                if let repeatFlag { options.repeat = repeatFlag }
                if let single { options.single = single }
                if let consume { options.consume = consume }
                if let random { options.random = random }
                if let crossfade { options.crossfade = crossfade }
            }
            return ["repeat": .bool(options.repeat), "single": .bool(options.single), "consume": .bool(options.consume),
                    "random": .bool(options.random), "crossfade": JSONValue(options.crossfade),
                    "version": JSONValue(player.queue.version)]
        case "volume":
            let level = try params.integer("level"), delta = try params.integer("delta")
            if let level, !(0...100).contains(level) {
                throw RPC.Failure(.invalidParams, "invalid params: 'level' must be a whole number from 0 to 100")
            }
            if let delta, !(-100...100).contains(delta) {
                throw RPC.Failure(.invalidParams, "invalid params: 'delta' must be a whole number from -100 to 100")
            }
            if level != nil && delta != nil {
                throw RPC.Failure(.invalidParams, "invalid params: give 'level' or 'delta', not both")
            }
            return ["volume": JSONValue(player.setVolume(level: level, delta: delta))]
        case "replay_gain":
            var mode: ReplayGainMode?
            if let text = try params.string("mode") {
                guard let parsed = ReplayGainMode(rawValue: text) else {
                    throw RPC.Failure(.invalidParams, "invalid params: 'mode' must be off, track, album, auto or loudness")
                }
                mode = parsed
            }
            let preamp = try params.number("preamp_db", unit: "decibels")
            if let preamp, !(-15...15).contains(preamp) {
                throw RPC.Failure(.invalidParams, "invalid params: 'preamp_db' must be a number from -15 to 15")
            }
            return ProtocolEncoding.replayGain(player.setReplayGain(mode: mode, preampDB: preamp))
        case "stop":
            return changed(try player.stop())
        case "sleep":
            return try sleepAnswer(params)
        case "announce":
            return try announceAnswer(params)
        case "alarms.list":
            return ["alarms": .array(player.alarms.alarms.map(ProtocolEncoding.alarm))]
        case "subscribe":
            let kinds = try params.stringArray("events") ?? ["transition", "performance"]
            var subscription = Set<ClientSession.EventKind>()
            for kind in kinds {
                guard let parsed = ClientSession.EventKind(rawValue: kind) else {
                    throw RPC.Failure(.invalidParams, "invalid params: unknown event type '\(kind)' (transition, performance, position, queue, item, library)")
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
            throw RPC.Failure(.internalError, "internal error: '\(request.method)' has no answer at once")
        }
    }

    /// `add {urls, position?, play?}`: playlists (.m3u, .m3u8, .pls) add their entries.
    /// `add` off the event loop: to read a playlist file or the library, or to play what was added.
    func addAndPlay(_ params: Params, session: ClientSession) async throws -> JSONValue {
        let added = try add(params, for: session.peer, library: await librarySongs(params))
        guard try params.bool("play") == true, let first = added.items.first, case .object(var answer) = added.answer else {
            return added.answer
        }
        let played: Result<PlaybackState, PlayerError>
        do throws(PlayerError) { played = .success(try await player.play(id: first).state) } catch { played = .failure(error) }
        switch played {
        case .success(let state): answer["state"] = ProtocolEncoding.state(state)
        // The items are queued; none of them could play (each got an item_failed event).
        case .failure(.failed): answer["state"] = ProtocolEncoding.state(player.state)
        case .failure(let error): throw error
        }
        return .object(answer)
    }

    /// What the library holds under each path `add` names in it: the songs (a directory's, in
    /// the library's order, as MPD's `add` takes them) with their tags, so they join the queue
    /// with them (no file is opened for them). A path the library does not hold (yet) is left
    /// as given; a failed read leaves the songs to the tag reader.
    struct LibrarySongs {
        var songs: [String: [URL]] = [:]
        var known: [URL: MediaTags] = [:]
    }

    private func librarySongs(_ params: Params) async -> LibrarySongs {
        guard let library, let texts = try? params.stringArray("urls") else { return LibrarySongs() }
        let paths = texts.filter(Self.isLibraryPath).compactMap { text in (try? Self.libraryPath(text)).map { (text, $0) } }
        guard !paths.isEmpty else { return LibrarySongs() }
        let found = try? await reading { () throws -> LibrarySongs in
            var found = LibrarySongs()
            for (text, path) in paths where !path.isEmpty && found.songs[text] == nil {
                var songs: [URL] = []
                let held = try library.walk(path, withTags: true) { entries in
                    for case .song(let song) in entries {
                        let url = URL(fileURLWithPath: library.root + "/" + song.uri, isDirectory: false)
                        songs.append(url)
                        found.known[url] = song.mediaTags
                    }
                }
                if held { found.songs[text] = songs }
            }
            return found
        }
        return found ?? LibrarySongs()
    }

    /// A source named by its path in the music directory ("Artist/Album/01.flac").
    static func isLibraryPath(_ text: String) -> Bool {
        !text.hasPrefix("/") && SourcePolicy.scheme(of: text) == nil
    }

    private func add(_ params: Params, for peer: ClientPeer, library: LibrarySongs = LibrarySongs()) throws -> (items: [Int], answer: JSONValue) {
        _ = try params.bool("play")
        guard let texts = try params.stringArray("urls"), !texts.isEmpty else {
            throw RPC.Failure(.invalidParams, "invalid params: 'urls' must be a non-empty array of strings")
        }
        var entries: [(url: URL, title: String?)] = []
        for text in texts {
            let url = try sourceURL(text)
            try sources.check(url)
            if let songs = library.songs[text] {
                guard !songs.isEmpty else { throw RPC.Failure(.invalidParams, "invalid params: no songs under '\(text)' in the library") }
                try sources.check(adding: songs)
                for song in songs { entries.append((song, nil)) }
            } else if url.isFileURL, let kind = PlaylistFile.kind(forPath: url.path) {
                let listed = try playlistEntries(url, kind: kind, for: peer)
                try sources.check(adding: listed.map { $0.url })
                entries += listed
            } else {
                entries.append((url, nil))
            }
        }
        let position = try params.integer("position")
        let added = try player.add(entries, at: position, known: library.known)
        let items: [JSONValue] = added.items.map { ["id": JSONValue($0.id), "url": ProtocolEncoding.url($0.url)] }
        return (added.items.map(\.id), ["items": .array(items), "version": JSONValue(added.version)])
    }

    /// A playlist file's entries, read for the client that named it (see `PlaylistReader`;
    /// the caller checks each entry against the source policy).
    private func playlistEntries(_ url: URL, kind: PlaylistFile.Kind, for peer: ClientPeer) throws -> [(url: URL, title: String?)] {
        do throws(PlaylistReader.Refusal) {
            let parsed = try PlaylistReader.entries(at: url.path, kind: kind, for: peer, sources: sources, served: nil)
            return parsed.map { ($0.url, $0.title) }
        } catch {
            switch error.kind {
            case .denied: throw PlayerError.failed(PlaybackError(.permissionDenied, error.message))
            case .missing, .unreadable: throw RPC.Failure(.invalidParams, "invalid params: cannot read \(error.message)")
            }
        }
    }

    private func changed(_ transition: PlaybackTransition) -> JSONValue {
        ["changed": .bool(transition.didChangeState), "state": ProtocolEncoding.state(transition.to)]
    }

    /// An absolute path, a file:// URL, or an http(s):// URL. Relative paths are refused: the
    /// daemon's working directory is not the client's (tonearmctl makes paths absolute before
    /// sending). Any other protocol is refused by name, before anything is parsed further.
    /// A source as a client names it: what `mediaURL` takes, or a path relative to the music
    /// directory when there is a library ("Artist/Album/01.flac").
    func sourceURL(_ text: String) throws -> URL {
        if let library, Self.isLibraryPath(text) {
            let path = try Self.libraryPath(text)
            guard !path.isEmpty else { throw RPC.Failure(.invalidParams, "invalid params: '\(text)' names the music directory itself") }
            return URL(fileURLWithPath: library.root + "/" + path)
        }
        return try Self.mediaURL(text, sources.input)
    }

    static func mediaURL(_ text: String, _ input: InputConfiguration) throws -> URL {
        if text.hasPrefix("/") { return try checkedFileURL(text) }
        // Schemes are case-insensitive (RFC 3986): FILE:///x is file:///x.
        if let url = URL(string: text), url.scheme?.lowercased() == "file" {
            guard !url.path.isEmpty else {
                throw RPC.Failure(.invalidParams, "invalid params: the file URL '\(text)' names no path, or its path is not valid UTF-8 once decoded")
            }
            return try checkedFileURL(url.path)
        }
        if let scheme = SourcePolicy.scheme(of: text) {
            guard scheme == "http" || scheme == "https", input.protocols.contains(scheme) else {
                throw PlayerError.failed(PlaybackError(.permissionDenied, SourcePolicy.protocolRefusal(scheme, input)))
            }
            guard let url = URL(string: text), let host = url.host, !host.isEmpty else {
                throw RPC.Failure(.invalidParams, "invalid params: '\(text.prefix(200))' is not a valid \(scheme) URL")
            }
            return url
        }
        throw RPC.Failure(.invalidParams, "invalid params: url must be an absolute path or a file:// URL, not '\(text)'")
    }

    /// A path no file system can hold is a bad request, not a file that may appear later.
    private static func checkedFileURL(_ path: String) throws -> URL {
        if path.utf8.count >= Int(PATH_MAX) {
            throw RPC.Failure(.invalidParams, "invalid params: the path is \(path.utf8.count) bytes long; at most \(PATH_MAX - 1) are possible")
        }
        if let long = path.split(separator: "/").first(where: { $0.utf8.count > Int(NAME_MAX) }) {
            throw RPC.Failure(.invalidParams, "invalid params: the file name '\(long.prefix(40))…' is \(long.utf8.count) bytes long; at most \(NAME_MAX) are possible")
        }
        return URL(fileURLWithPath: path)
    }
}

/// Typed, strict access to a request's params object.
struct Params {
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

    func requiredNumber(_ key: String, bounded: Bool = true) throws -> Double {
        guard let value = try number(key, bounded: bounded) else { throw RPC.Failure(.invalidParams, "invalid params: '\(key)' is required") }
        return value
    }

    /// A finite number; `bounded`: also under 1e9 in magnitude.
    func number(_ key: String, unit: String = "seconds", bounded: Bool = true) throws -> Double? {
        guard let value = object[key], value != .null else { return nil }
        guard case .number(let number) = value, number.isFinite, !bounded || abs(number) < 1e9 else {
            throw RPC.Failure(.invalidParams, "invalid params: '\(key)' must be a number of \(unit)")
        }
        return number
    }

    func string(_ key: String) throws -> String? {
        guard let value = object[key], value != .null else { return nil }
        guard case .string(let text) = value else { throw RPC.Failure(.invalidParams, "invalid params: '\(key)' must be a string") }
        return text
    }

    func integer(_ key: String) throws -> Int? {
        guard let value = object[key], value != .null else { return nil }
        guard case .number(let number) = value, number.isFinite, number.rounded() == number, abs(number) < 1e9 else {
            throw RPC.Failure(.invalidParams, "invalid params: '\(key)' must be a whole number")
        }
        return Int(number)
    }

    func requiredInteger(_ key: String) throws -> Int {
        guard let value = try integer(key) else { throw RPC.Failure(.invalidParams, "invalid params: '\(key)' is required") }
        return value
    }

    func requiredIntegerArray(_ key: String) throws -> [Int] {
        guard let value = object[key] else { throw RPC.Failure(.invalidParams, "invalid params: '\(key)' is required") }
        guard case .array(let items) = value else {
            throw RPC.Failure(.invalidParams, "invalid params: '\(key)' must be an array of whole numbers")
        }
        return try items.map { item in
            guard case .number(let number) = item, number.isFinite, number.rounded() == number, abs(number) < 1e9 else {
                throw RPC.Failure(.invalidParams, "invalid params: '\(key)' must be an array of whole numbers")
            }
            return Int(number)
        }
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
