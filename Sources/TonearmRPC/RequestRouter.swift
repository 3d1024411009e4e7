import Foundation
import NIOCore
import TonearmCore
import TonearmFrontEnd
import TonearmLibrary
import TonearmMedia
import TonearmPlayer
import TonearmProtocol

/// Serves JSON-RPC requests through the method table (`RPCMethods`): what it says of a
/// request (known, allowed to this client, its params), then the method's body. It holds what
/// the bodies reach: the player, the library, the stored playlists, the source rules. Each
/// method checks its params strictly: an unknown field, a wrong type or an out-of-range number
/// gets `invalidParams` naming it.
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
            return .failure(
                RPC.Failure(
                    .methodNotFound, "method not found: '\(request.method)'",
                    data: ["methods": .array(RPCMethods.names.map(JSONValue.string))]))
        }
        if session.access == .read, method.access == .control {
            session.logRefusal(method: request.method)
            return .failure(
                RPC.Failure(
                    .permissionDenied,
                    "permission denied: '\(request.method)' needs control access; "
                        + "this client may only read (control.read_gids)"))
        }
        if let refusal = Self.catchingFailure({ try Params(request.params, method: request.method).allow(method.params) }) {
            return .failure(refusal)
        }
        guard let now = method.now(for: request, player) else { return nil }
        return Self.catching { try now(RPCCall(router: self, request: request, session: session)) }
    }

    /// Answers a request that waits for the engine (`answerNow` said nil).
    func answerLater(_ request: RPC.Request, session: ClientSession) async -> Result<JSONValue, RPC.Failure> {
        guard let later = RPCMethods.table[request.method]?.later else {
            return .failure(RPC.Failure(.internalError, "internal error: '\(request.method)' is not a waiting method"))
        }
        do {
            return .success(try await later(RPCCall(router: self, request: request, session: session)))
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

    func add(_ params: Params, for peer: ClientPeer, library: LibrarySongs = LibrarySongs()) throws -> (items: [Int], answer: JSONValue) {
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

    static func changed(_ transition: PlaybackTransition) -> JSONValue {
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
                throw RPC.Failure(
                    .invalidParams, "invalid params: the file URL '\(text)' names no path, or its path is not valid UTF-8 once decoded")
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
            throw RPC.Failure(
                .invalidParams, "invalid params: the path is \(path.utf8.count) bytes long; at most \(PATH_MAX - 1) are possible")
        }
        if let long = path.split(separator: "/").first(where: { $0.utf8.count > Int(NAME_MAX) }) {
            throw RPC.Failure(
                .invalidParams,
                "invalid params: the file name '\(long.prefix(40))…' is \(long.utf8.count) bytes long; at most \(NAME_MAX) are possible")
        }
        return URL(fileURLWithPath: path)
    }
}
