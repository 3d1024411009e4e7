import Foundation
import TonearmCore
import TonearmFrontEnd
import TonearmLibrary
import TonearmMedia
import TonearmPlayer
import TonearmProtocol
import TonearmSync

/// The music directory as MPD clients see it, read from the directory itself (there is no
/// database): URIs relative to it, listings, stored playlists (its .m3u files), and tags read on
/// demand and kept by path and modification time. Every method that touches the disk runs on the
/// library's own thread (`perform`).
final class MPDLibrary: Sendable {
    /// The music directory, `..` and links resolved; nil: none configured.
    let root: String?
    let sources: SourcePolicy
    private let worker = BlockingWorker(name: "tonearm-library")
    private let cache = Locked<[String: (modified: Int, tags: MediaTags)]>([:])
    /// The last song's picture: a client reads it in chunks, one `readpicture` per chunk.
    private let lastPicture = Locked<(path: String, modified: Int, size: Int, picture: EmbeddedPicture?)?>(nil)

    /// The library's database, if there is one: listings and counts come from it.
    let database: Library?
    /// The stored playlists (`save`, `playlistadd`, …), if there is a place for them.
    let store: PlaylistStore?

    init(root: String?, sources: SourcePolicy, database: Library? = nil, store: PlaylistStore? = nil) {
        self.root = root.map { MediaRoots.resolve($0) }
        self.sources = sources
        self.database = database
        self.store = store
    }

    func shutdown() { worker.shutdown() }

    /// Runs disk work on the library's thread.
    func perform<T: Sendable>(_ job: @escaping @Sendable () throws(MPDError) -> T) async throws(MPDError) -> T {
        try await worker.run(job)
    }

    // MARK: URIs (no disk access)

    /// A client's URI as a file URL: relative to the music directory, or an absolute path, or a
    /// file:// URL. A relative URI may not climb out of the music directory.
    func url(forURI uri: String) throws(MPDError) -> URL {
        if uri.hasPrefix("/") { return URL(fileURLWithPath: uri).standardizedFileURL }
        if let scheme = SourcePolicy.uriScheme(of: uri) {
            if scheme == "http" || scheme == "https" {
                guard sources.input.protocols.contains(scheme) else { throw MPDError(.noExist, "Unsupported URI scheme") }
                guard let url = URL(string: uri), let host = url.host, !host.isEmpty else { throw MPDError(.noExist, "Malformed URI") }
                return url
            }
            guard scheme == "file", let url = URL(string: uri) else { throw MPDError(.noExist, "Unsupported URI scheme") }
            guard !url.path.isEmpty else { throw MPDError(.noExist, "Malformed URI") }
            return URL(fileURLWithPath: url.path).standardizedFileURL
        }
        guard let root else { throw MPDError(.noExist, "No database") }
        let trimmed = uri.split(separator: "/", omittingEmptySubsequences: true)
        guard !trimmed.contains("..") else { throw .argument("Malformed URI") }
        return URL(fileURLWithPath: trimmed.isEmpty ? root : root + "/" + trimmed.joined(separator: "/"))
    }

    /// How a file is named to clients: relative to the music directory when inside it, else its
    /// absolute path (as MPD names songs added from outside its database).
    func uri(for url: URL) -> String {
        guard url.isFileURL else { return url.absoluteString }
        let path = url.path
        // Bytes, not `Character`s: `playlistinfo` asks this of every item in the queue, and a
        // `String`'s `hasPrefix` and `dropFirst` walk its graphemes.
        guard let root else { return path }
        let prefix = root == "/" ? 1 : root.utf8.count + 1
        guard path.utf8.count >= prefix, path.utf8.starts(with: root.utf8),
            path.utf8[path.utf8.index(path.utf8.startIndex, offsetBy: prefix - 1)] == UInt8(ascii: "/")
        else { return path }
        return String(decoding: path.utf8.dropFirst(prefix), as: UTF8.self)
    }

    private func isInMusicDirectory(_ url: URL) -> Bool {
        guard let root else { return false }
        let path = MediaRoots.resolve(url.path)
        return path == root || path.hasPrefix(root == "/" ? "/" : root + "/")
    }

    static func isSong(_ name: String) -> Bool { LibraryFiles.isSong(name) }
    static func isPlaylist(_ name: String) -> Bool { LibraryFiles.isPlaylist(name) }

    // MARK: Reading the disk (the library's thread only)

    enum Entry: Sendable {
        case directory(uri: String, modified: Int)
        case song(uri: String, url: URL, modified: Int)
        case playlist(uri: String, modified: Int)
    }

    /// What `lsinfo` shows of `uri`: a directory's directories, songs and playlists (each sorted
    /// by name), or the one song a file URI names.
    func list(_ uri: String) throws(MPDError) -> [Entry] {
        guard root != nil || uri.hasPrefix("/") || uri.hasPrefix("file:") else { throw MPDError(.noExist, "No database") }
        let url = try url(forURI: uri)
        try checkSource(url)
        guard url.isFileURL else { throw MPDError(.noExist, "No such directory") }
        var info = stat()
        guard stat(url.path, &info) == 0 else { throw MPDError(.noExist, "No such directory") }
        if info.st_mode & S_IFMT == S_IFREG {
            return [.song(uri: self.uri(for: url), url: url, modified: Int(info.st_mtim.tv_sec))]
        }
        // Directories are listed only inside the music directory: a read-only client must not
        // be able to walk the rest of the file system (MPD lists only the music directory too).
        guard info.st_mode & S_IFMT == S_IFDIR, isInMusicDirectory(url) else { throw MPDError(.noExist, "No such directory") }
        let path = url.path
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).filter { !$0.hasPrefix(".") }.sorted()
        var directories: [Entry] = []
        var songs: [Entry] = []
        var playlists: [Entry] = []
        for name in names {
            let child = path == "/" ? "/" + name : path + "/" + name
            var childInfo = stat()
            guard stat(child, &childInfo) == 0 else { continue }
            let modified = Int(childInfo.st_mtim.tv_sec)
            let childURI = self.uri(for: URL(fileURLWithPath: child))
            switch childInfo.st_mode & S_IFMT {
            case S_IFDIR: directories.append(.directory(uri: childURI, modified: modified))
            case S_IFREG where Self.isSong(name):
                songs.append(.song(uri: childURI, url: URL(fileURLWithPath: child, isDirectory: false), modified: modified))
            case S_IFREG where Self.isPlaylist(name): playlists.append(.playlist(uri: childURI, modified: modified))
            default: break
            }
        }
        return songs + directories + playlists
    }

    /// Every directory and song under `uri`, depth first, as `listall` shows them. Directory
    /// links are not followed (a link loop must not run away).
    func walk(_ uri: String) throws(MPDError) -> [Entry] {
        var result: [Entry] = []
        var pending = [uri]
        var seen = Set<String>()
        while let next = pending.popLast() {
            let entries = try list(next)
            var subdirectories: [String] = []
            for entry in entries {
                switch entry {
                case .directory(let child, _):
                    let path = (try? url(forURI: child).path) ?? child
                    var info = stat()
                    guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR, seen.insert(path).inserted else { continue }
                    result.append(entry)
                    subdirectories.append(child)
                case .song: result.append(entry)
                case .playlist: break
                }
            }
            pending.append(contentsOf: subdirectories.reversed())
            guard result.count < 1_000_000 else { break }
        }
        return result
    }

    /// The songs `add` of a URI adds: the file itself, or every song under a directory, in order.
    func songs(_ uri: String) throws(MPDError) -> [URL] {
        let url = try url(forURI: uri)
        try checkSource(url)
        // A stream is added as it is, as MPD does; it is opened when it plays.
        guard url.isFileURL else { return [url] }
        var info = stat()
        guard stat(url.path, &info) == 0 else {
            throw MPDError(.noExist, uri.hasPrefix("/") || uri.hasPrefix("file:") ? "No such file" : "No such directory")
        }
        if info.st_mode & S_IFMT == S_IFREG { return [url] }
        return try walk(uri).compactMap { entry in
            if case .song(_, let url, _) = entry { return url }
            return nil
        }
    }

    /// A song's tags, from the cache while the file is unchanged.
    func tags(_ url: URL) -> MediaTags? {
        var info = stat()
        guard stat(url.path, &info) == 0 else { return nil }
        let modified = Int(info.st_mtim.tv_sec)
        if let cached = cache.withLock({ $0[url.path] }), cached.modified == modified { return cached.tags }
        let tags = Player.readTags(url) ?? MediaTags()
        cache.withLock { cache in
            // Bounded memory: a library browsed end to end is forgotten and read again.
            if cache.count >= 50_000 { cache.removeAll(keepingCapacity: true) }
            cache[url.path] = (modified, tags)
        }
        return tags
    }

    /// The picture a song carries (`modified` and `size` as the file is now), read once for the
    /// chunks a client asks for one by one.
    func picture(_ url: URL, modified: Int, size: Int) -> EmbeddedPicture? {
        if let last = lastPicture.withLock({ $0 }), last.path == url.path, last.modified == modified, last.size == size {
            return last.picture
        }
        let picture = Player.readPicture(url)
        lastPicture.withLock { $0 = (url.path, modified, size, picture) }
        return picture
    }

    /// Tags already read, without touching the disk (for queue listings on the event loop).
    func cachedTags(_ url: URL) -> MediaTags? { cache.withLock { $0[url.path]?.tags } }

    // MARK: The database (the library's thread)

    /// A URI the database answers for: relative to the music directory, when there is a database.
    func databaseURI(_ uri: String) -> Bool {
        database != nil && !uri.hasPrefix("/") && SourcePolicy.uriScheme(of: uri) == nil
    }

    /// The library's counts; nil without a database.
    func stats() throws(MPDError) -> LibraryStats? {
        guard let database else { return nil }
        do { return try database.stats() } catch { throw Self.failure(error) }
    }

    /// What the database holds at `uri` (a directory's songs, then its directories; or the one
    /// song), `lsinfo`'s answer.
    func databaseListing(_ uri: String, withTags: Bool) throws(MPDError) -> [LibraryEntry] {
        guard let database else { throw MPDError(.noExist, "No database") }
        guard !uri.split(separator: "/").contains("..") else { throw .argument("Malformed URI") }
        let listing: [LibraryEntry]?
        do { listing = try database.list(uri, withTags: withTags) } catch { throw Self.failure(error) }
        guard let listing else { throw MPDError(.noExist, "No such directory") }
        return listing
    }

    /// A walk of what the database holds under `uri`, in MPD's order, taken a part at a time.
    func startWalk(_ uri: String, withTags: Bool) throws(MPDError) -> LibraryWalk {
        guard let database else { throw MPDError(.noExist, "No database") }
        guard !uri.split(separator: "/").contains("..") else { throw .argument("Malformed URI") }
        let walk: LibraryWalk?
        do { walk = try database.startWalk(uri, withTags: withTags) } catch { throw Self.failure(error) }
        guard let walk else { throw MPDError(.noExist, "No such directory") }
        return walk
    }

    /// The walk's next part, an entry at a time (a song's bytes valid only during its visit).
    func next(_ walk: inout LibraryWalk, atLeast count: Int, _ visit: (LibraryPassItem) -> Void) throws(MPDError) {
        guard let database else { return }
        do { try database.next(&walk, atLeast: count, visit) } catch { throw Self.failure(error) }
    }

    /// The songs `add` of a URI adds, with the tags the database has for them: from the
    /// database when it holds the URI (no file is opened), else as `songs` finds them.
    func songsToAdd(_ uri: String) throws(MPDError) -> (urls: [URL], known: [URL: MediaTags]) {
        if let database, databaseURI(uri), !uri.split(separator: "/").contains("..") {
            var found: [LibrarySong] = []
            let held =
                (try? database.walk(uri, withTags: true) { entries in
                    for case .song(let song) in entries { found.append(song) }
                }) ?? false
            if held {
                let urls = found.map { URL(fileURLWithPath: database.root + "/" + $0.uri, isDirectory: false) }
                try checkSources(urls)
                return (urls, Dictionary(zip(urls, found.map(\.mediaTags))) { first, _ in first })
            }
        }
        return (try songs(uri), [:])
    }

    /// The songs each URI adds, in order, as `songsToAdd` finds them, up to the first URI that
    /// fails (`failure`); the songs the database holds are looked up in one read.
    struct SongsToAdd: Sendable {
        var songs: [[URL]] = []
        var known: [URL: MediaTags] = [:]
        var failure: MPDError?
    }

    func songsToAdd(_ uris: [String]) -> SongsToAdd {
        let held = databaseSongs(uris)
        var found = SongsToAdd()
        for (uri, song) in zip(uris, held) {
            if let song, let database {
                // A song is a file: saying so spares a stat per song.
                let url = URL(fileURLWithPath: database.root + "/" + song.uri, isDirectory: false)
                do throws(MPDError) { try checkSources([url]) } catch {
                    found.failure = error
                    break
                }
                found.songs.append([url])
                found.known[url] = song.mediaTags
                continue
            }
            do throws(MPDError) {
                let one = try songsToAdd(uri)
                found.songs.append(one.urls)
                found.known.merge(one.known) { first, _ in first }
            } catch {
                found.failure = error
                break
            }
        }
        return found
    }

    /// What the database holds of these URIs (songs of the music directory), in their order;
    /// nil for others. Without a database, or when it cannot be read, nothing.
    func databaseSongs(_ uris: [String]) -> [LibrarySong?] {
        let none = [LibrarySong?](repeating: nil, count: uris.count)
        guard let database else { return none }
        let held = uris.indices.filter { databaseURI(uris[$0]) }
        guard let songs = try? database.songs(at: held.map { uris[$0] }) else { return none }
        var found = none
        for (index, song) in zip(held, songs) { found[index] = song }
        return found
    }

    /// The tags the database has for these files, for the queue (no file is opened for them).
    func knownTags(_ urls: [URL]) -> [URL: MediaTags] {
        let uris = urls.map { uri(for: $0) }
        let songs = databaseSongs(uris)
        var known: [URL: MediaTags] = [:]
        for (url, song) in zip(urls, songs) { known[url] = song?.mediaTags }
        return known
    }

    /// The playlist files in a directory of the music directory (which the database does not keep).
    func playlistFiles(in uri: String) -> [(uri: String, modified: Int)] {
        guard let root else { return [] }
        let path = uri.isEmpty ? root : root + "/" + uri
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? [])
            .filter { !$0.hasPrefix(".") && Self.isPlaylist($0) }.sorted()
        return names.compactMap { name in
            var info = stat()
            guard stat(path + "/" + name, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
            return (uri.isEmpty ? name : uri + "/" + name, Int(info.st_mtim.tv_sec))
        }
    }

    private static func failure(_ error: any Error) -> MPDError {
        MPDError(.system, "the library database: \(error)")
    }

    /// The stored playlists: those of the playlist directory, then the music directory's own
    /// .m3u files (read-only) by name without the suffix, unless a stored one has that name.
    func playlists() -> [(name: String, modified: Int)] {
        let stored = (store?.list() ?? []).map { ($0.name, $0.modified) }
        let names = Set(stored.map(\.0))
        return stored + musicDirectoryPlaylists().filter { !names.contains($0.name) }
    }

    private func musicDirectoryPlaylists() -> [(name: String, modified: Int)] {
        guard let root else { return [] }
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).sorted()
        return names.compactMap { name in
            let lower = name.lowercased()
            guard !name.hasPrefix("."), lower.hasSuffix(".m3u") || lower.hasSuffix(".m3u8") else { return nil }
            var info = stat()
            guard stat(root + "/" + name, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
            return ((name as NSString).deletingPathExtension, Int(info.st_mtim.tv_sec))
        }
    }

    /// A stored playlist's entries as stored (URIs as clients name songs); nil: it is not one
    /// of the playlist directory's.
    func storedEntries(_ name: String) throws(MPDError) -> [String]? {
        guard let store, store.contains(name) else { return nil }
        do throws(PlaylistStore.Failure) { return try store.entries(name) } catch {
            if error == .noSuchPlaylist { return nil }
            throw Self.failure(error)
        }
    }

    /// The playlist store's failure in MPD's words.
    static func failure(_ error: PlaylistStore.Failure) -> MPDError {
        switch error {
        case .badName, .badIndex, .badRange, .badPosition: .argument(error.description)
        case .noSuchPlaylist: MPDError(.noExist, error.description)
        case .exists: MPDError(.exist, error.description)
        case .tooLarge: MPDError(.playlistMax, error.description)
        case .io(let message): MPDError(.system, message)
        }
    }

    /// The entries of a stored playlist (`name`: one of the playlist directory's, or a .m3u in
    /// the music directory) or of a playlist file a URI names, read for `peer` (see
    /// `PlaylistReader`). A stored entry that names nothing playable is skipped, as MPD does.
    func playlistEntries(_ name: String, for peer: ClientPeer) throws(MPDError) -> [(url: URL, title: String?)] {
        if let stored = try storedEntries(name) {
            return stored.compactMap { uri in
                guard let url = try? url(forURI: uri), sources.refusal(url) == nil else { return nil }
                return (url, nil)
            }
        }
        var candidates: [URL] = []
        if Self.isPlaylist(name) { candidates.append(try url(forURI: name)) }
        if let root, !name.contains("/") {
            candidates += [root + "/" + name + ".m3u", root + "/" + name + ".m3u8"].map { URL(fileURLWithPath: $0) }
        }
        for file in candidates {
            guard let kind = PlaylistFile.kind(forPath: file.path) else { continue }
            let entries: [PlaylistEntry]
            do throws(PlaylistReader.Refusal) {
                entries = try PlaylistReader.entries(
                    at: file.path, kind: kind, for: peer, sources: sources,
                    served: root.map(MediaRoots.resolve))
            } catch {
                switch error.kind {
                case .missing: continue
                case .denied: throw MPDError(.permission, error.message)
                case .unreadable: throw MPDError(.playlistLoad, "Failed to load playlist \(name): \(error.message)")
                }
            }
            return try entries.map { entry throws(MPDError) in
                try checkSource(entry.url)
                return (entry.url, entry.title)
            }
        }
        throw MPDError(.noExist, "No such playlist")
    }

    /// The store, for a command that changes `name`: a playlist of the music directory is
    /// read-only, and without a playlist directory nothing can be stored.
    func writableStore(for name: String) throws(MPDError) -> PlaylistStore {
        guard let store else { throw MPDError(.unknown, "Stored playlists are disabled") }
        if !store.contains(name), musicDirectoryPlaylists().contains(where: { $0.name == name }) {
            throw MPDError(.permission, "playlist \(name) is a file of the music directory, which is read-only")
        }
        return store
    }

    /// `input.protocols` and `input.roots` confine MPD clients as they confine JSON-RPC clients.
    func checkSource(_ url: URL) throws(MPDError) {
        if let reason = sources.refusal(url) { throw MPDError(.permission, reason) }
    }

    /// What `add` (and `findadd`, `searchadd`) queue, by the rule JSON-RPC's `add` applies
    /// (`SourcePolicy.refusal(adding:)`): songs the database holds included.
    func checkSources(_ urls: [URL]) throws(MPDError) {
        if let (_, reason) = sources.refusal(adding: urls) { throw MPDError(.permission, reason) }
    }
}
