import Foundation
import NIOCore
import TonearmCore
import TonearmFrontEnd
import TonearmLibrary
import TonearmMedia
import TonearmPlayer

/// The music directory: from the library's database, or read from the directory itself without
/// one. Searches without a database answer as an MPD with an empty database does.
extension MPDCommands {
    static let libraryCommands: [MPDCommand] = [
        MPDCommand(
            "lsinfo", .read, 0...1,
            .later { call throws(MPDError) in
                let uri = call.count == 1 ? normalized(call[0]) : ""
                let environment = call.environment
                return try await environment.library.perform { () throws(MPDError) in
                    var r = MPDResponse()
                    let library = environment.library
                    if library.databaseURI(uri) {
                        for entry in try library.databaseListing(uri, withTags: true) {
                            write(entry, withTags: true, shown: call.tags, environment, into: &r)
                        }
                        // The root's playlists are the stored ones, listed below by name.
                        if !uri.isEmpty {
                            for playlist in library.playlistFiles(in: uri) {
                                r.add("playlist", playlist.uri)
                                r.add("Last-Modified", MPDEnvironment.timestamp(playlist.modified))
                            }
                        } else {
                            writeStoredPlaylists(library, into: &r)
                        }
                        return r.buffer
                    }
                    for entry in try environment.library.list(uri) {
                        switch entry {
                        case .directory(let uri, let modified):
                            r.add("directory", uri)
                            r.add("Last-Modified", MPDEnvironment.timestamp(modified))
                        case .song(let uri, let url, let modified):
                            environment.writeLibrarySong(uri: uri, url: url, modified: modified, shown: call.tags, into: &r)
                        case .playlist(let uri, let modified):
                            // The root's playlists are the stored ones, listed below by name.
                            guard !uri.isEmpty, uri.contains("/") else { continue }
                            r.add("playlist", uri)
                            r.add("Last-Modified", MPDEnvironment.timestamp(modified))
                        }
                    }
                    // The root also lists the stored playlists.
                    if uri.isEmpty { writeStoredPlaylists(environment.library, into: &r) }
                    return r.buffer
                }
            }),
        MPDCommand(
            "listall", .read, 0...1,
            .stream { call, sink throws(MPDError) in
                try await listAll(call, withTags: false, into: sink)
            }),
        MPDCommand(
            "listallinfo", .read, 0...1,
            .stream { call, sink throws(MPDError) in
                try await listAll(call, withTags: true, into: sink)
            }),
        MPDCommand(
            "find", .read, 1...Int(Int32.max),
            .later { call throws(MPDError) in
                try await MPDReplyCache.cached(call) { call throws(MPDError) in try await find(call, fold: false) }
            }),
        MPDCommand(
            "search", .read, 1...Int(Int32.max),
            .later { call throws(MPDError) in
                try await MPDReplyCache.cached(call) { call throws(MPDError) in try await find(call, fold: true) }
            }),
        MPDCommand("findadd", .control, 1...Int(Int32.max), .later { call throws(MPDError) in try await findAdd(call, fold: false) }),
        MPDCommand("searchadd", .control, 1...Int(Int32.max), .later { call throws(MPDError) in try await findAdd(call, fold: true) }),
        MPDCommand("list", .read, 1...Int(Int32.max), .later { call throws(MPDError) in try await MPDReplyCache.cached(call, list) }),
        MPDCommand(
            "count", .read, 1...Int(Int32.max),
            .later { call throws(MPDError) in
                try await MPDReplyCache.cached(call) { call throws(MPDError) in try await count(call, fold: false) }
            }),
        MPDCommand(
            "searchcount", .read, 1...Int(Int32.max),
            .later { call throws(MPDError) in
                try await MPDReplyCache.cached(call) { call throws(MPDError) in try await count(call, fold: true) }
            }),
        MPDCommand("update", .control, 0...1, .now { call, r throws(MPDError) in try update(call, rescan: false, into: &r) }),
        MPDCommand("rescan", .control, 0...1, .now { call, r throws(MPDError) in try update(call, rescan: true, into: &r) }),
    ]

    /// A scan of the music directory (or of one path in it) by the library, on its own thread;
    /// the reply is the job's number (a waiting scan's that covers the path). `rescan` reads
    /// unchanged files again. The path is checked by the library's rule (`Library.scanPath`).
    private static func update(_ call: MPDCall, rescan: Bool, into r: inout MPDResponse) throws(MPDError) {
        let library = call.environment.library
        guard library.root != nil else { throw MPDError(.noExist, "No database") }
        let path = call.count == 1 ? call[0] : ""
        if SourcePolicy.uriScheme(of: path) != nil { throw .argument("Malformed path") }
        do throws(LibraryUpdateRefusal) {
            guard let database = library.database else {
                // A music directory without a database (it could not be opened): nothing to scan,
                // the job is numbered and announced as MPD does for a database with nothing new.
                _ = try Library.scanPath(path)
                r.add("updating_db", call.environment.nextUpdateJob())
                return
            }
            r.add("updating_db", try database.update(path, rescan: rescan))
        } catch {
            throw updateRefusal(error)
        }
    }

    /// The library's refusal in MPD's words: "Malformed path" for a path outside the music
    /// directory, and MPD's own answer past 32 waiting scans (ACK 54 "Update queue is full").
    static func updateRefusal(_ refusal: LibraryUpdateRefusal) -> MPDError {
        switch refusal {
        case .badPath(let why): .argument("Malformed path: \(why)")
        case .queueFull: MPDError(.updateAlready, "Update queue is full")
        }
    }

    // MARK: Searching the database

    /// `find`/`search`: the songs a filter means, as `listallinfo` shows them. Without a
    /// database, none (an empty database's answer).
    private static func find(_ call: MPDCall, fold: Bool) async throws(MPDError) -> ByteBuffer? {
        let search = try MPDFilter(call, from: 0, fold: fold, sorting: true)
        let environment = call.environment
        guard let database = environment.library.database else { return nil }
        return try await environment.library.perform { () throws(MPDError) in
            var r = MPDResponse()
            try searching {
                try database.visitSongs(LibraryQuery(filter: search.filter, order: search.order, window: search.window)) { song in
                    environment.writeDatabaseSong(song, shown: call.tags, into: &r)
                }
            }
            return r.buffer
        }
    }

    /// `findadd`/`searchadd`: the songs a filter means, added to the queue in their order.
    private static func findAdd(_ call: MPDCall, fold: Bool) async throws(MPDError) -> ByteBuffer? {
        guard let (songs, root) = try await matchingSongs(call, from: 0, fold: fold) else { return nil }
        let urls = songs.map { URL(fileURLWithPath: root + "/" + $0.uri, isDirectory: false) }
        let library = call.environment.library
        try await library.perform { () throws(MPDError) in try library.checkSources(urls) }
        let known = Dictionary(zip(urls, songs.map(\.mediaTags))) { first, _ in first }
        do throws(PlayerError) { _ = try call.player.add(urls.map { ($0, nil) }, known: known) } catch { try settle(error) }
        return nil
    }

    /// The songs the filter from argument `from` on means, in its order, and the music
    /// directory they are in; nil without a database.
    static func matchingSongs(_ call: MPDCall, from: Int, fold: Bool) async throws(MPDError) -> ([LibrarySong], String)? {
        let search = try MPDFilter(call, from: from, fold: fold, sorting: true)
        let library = call.environment.library
        guard let database = library.database else { return nil }
        let songs = try await library.perform { () throws(MPDError) in
            try searching { try database.songs(LibraryQuery(filter: search.filter, order: search.order, window: search.window)) }
        }
        return (songs, database.root)
    }

    /// `count [FILTER] [group TAG]`: songs and whole seconds, in all or by the tag's values.
    private static func count(_ call: MPDCall, fold: Bool) async throws(MPDError) -> ByteBuffer? {
        var group: MediaTag?
        var last = call.count
        if last >= 2, call[last - 2].lowercased() == "group" {
            guard let tag = MediaTag.tag(named: call[last - 1]) else { throw .argument("Unknown tag type: \(call[last - 1])") }
            group = tag
            last -= 2
        }
        let filter = last > 0 ? try MPDFilter(call, from: 0, fold: fold, upTo: last).filter : LibraryFilter.everything
        let grouped = group
        let library = call.environment.library
        return try await library.perform { () throws(MPDError) in
            var r = MPDResponse()
            guard let database = library.database else {
                if grouped == nil {
                    r.add("songs", 0)
                    r.add("playtime", 0)
                }
                return r.buffer
            }
            for line in try searching({ try database.count(filter, groupedBy: grouped) }) {
                if let grouped, let value = line.group { r.add(grouped.name, value) }
                r.add("songs", line.songs)
                r.add("playtime", Int(line.playtime))
            }
            return r.buffer
        }
    }

    /// `list TYPE [FILTER] [group TAG …]`: the distinct values of a tag (or `file`: the songs'
    /// URIs) among the songs the filter means, grouped. `list album ARTIST` is the legacy form.
    private static func list(_ call: MPDCall) async throws(MPDError) -> ByteBuffer? {
        let isFile = call[0].caseInsensitiveCompare("file") == .orderedSame
        let tag = MediaTag.tag(named: call[0])
        guard isFile || tag != nil else { throw .argument("Unknown tag type: \(call[0])") }
        var filter = LibraryFilter.everything
        var groups: [MediaTag] = []
        if call.count == 2, !call[1].hasPrefix("(") {
            guard tag == .album else { throw .argument("should be \"Album\" for 3 arguments") }
            filter = .value(.tag(.artist), .equals, call[1], foldCase: false)
        } else if call.count > 1 {
            let parsed = try MPDFilter(call, from: 1, fold: false, grouping: true, filterOptional: true)
            filter = parsed.filter
            // MPD nests the last `group` outermost: its value is written first.
            groups = parsed.groups.reversed()
            if let tag, groups.contains(tag) { throw .argument("Conflicting group") }
        }
        let (wanted, groupTags) = (filter, groups)
        let library = call.environment.library
        return try await library.perform { () throws(MPDError) in
            var r = MPDResponse()
            guard let database = library.database else { return r.buffer }
            let rows = try searching { try database.distinct(isFile ? nil : tag, filter: wanted, groups: groupTags) }
            let names = groupTags.map(\.name) + [isFile ? "file" : tag!.name]
            var previous: [String] = []
            for row in rows {
                // A group's value is written when it changes, and so is every level below it.
                var changed = false
                for (level, value) in row.enumerated() {
                    if !changed, level < previous.count, previous[level] == value, level < row.count - 1 { continue }
                    changed = true
                    r.add(names[level], value)
                }
                previous = row
            }
            return r.buffer
        }
    }

    /// A database read, its failure in MPD's words.
    static func searching<T>(_ read: () throws -> T) throws(MPDError) -> T {
        do { return try read() } catch { throw MPDError(.system, "the library database: \(error)") }
    }

    /// Clients send "/" or "" for the root.
    static func normalized(_ uri: String) -> String {
        uri == "/" ? "" : uri
    }

    /// One entry of the database, as `lsinfo`/`listallinfo` (`withTags`) or `listall` show it.
    private static func write(
        _ entry: LibraryEntry, withTags: Bool, shown: MPDTags, _ environment: MPDEnvironment,
        into r: inout MPDResponse
    ) {
        switch entry {
        case .directory(let uri, let modified):
            r.add("directory", uri)
            if withTags { r.add("Last-Modified", MPDEnvironment.timestamp(modified)) }
        case .song(let song):
            if withTags {
                environment.writeDatabaseSong(song, shown: shown, into: &r)
            } else {
                r.add("file", song.uri)
            }
        }
    }

    /// Entries of a streamed listing per part (some 100 KiB with tags).
    static let entriesPerPart = 512

    /// `listall`/`listallinfo`: from the database, streamed a part at a time (a whole large
    /// library is tens of megabytes: the daemon holds one part, the client takes it at its pace);
    /// without one, the music directory as it is read, in one reply.
    private static func listAll(_ call: MPDCall, withTags: Bool, into sink: MPDReplySink) async throws(MPDError) {
        let uri = call.count == 1 ? normalized(call[0]) : ""
        let environment = call.environment
        let library = environment.library
        if library.databaseURI(uri) {
            var walk = try await library.perform { () throws(MPDError) in try library.startWalk(uri, withTags: withTags) }
            while !walk.isDone {
                let current = walk
                let (part, rest) = try await library.perform { () throws(MPDError) in
                    var walk = current
                    var r = MPDResponse()
                    try library.next(&walk, atLeast: Self.entriesPerPart) { item in
                        switch item {
                        case .directory(let directory):
                            r.add("directory", directory.uri)
                            if withTags { r.add(lastModified: directory.modified) }
                        case .song(let song):
                            if withTags {
                                environment.writeDatabaseSong(song, shown: call.tags, into: &r)
                            } else {
                                r.addFile(directory: song.directory, name: song.name)
                            }
                        }
                    }
                    return (r.buffer, walk)
                }
                walk = rest
                guard await sink.send(part) else { return }
            }
            return
        }
        let whole = try await library.perform { () throws(MPDError) -> ByteBuffer in
            var r = MPDResponse()
            for entry in try environment.library.walk(uri) {
                switch entry {
                case .directory(let uri, let modified):
                    r.add("directory", uri)
                    if withTags { r.add("Last-Modified", MPDEnvironment.timestamp(modified)) }
                case .song(let uri, let url, let modified):
                    if withTags {
                        environment.writeLibrarySong(uri: uri, url: url, modified: modified, shown: call.tags, into: &r)
                    } else {
                        r.add("file", uri)
                    }
                case .playlist: break
                }
            }
            return r.buffer
        }
        _ = await sink.send(whole)
    }
}
