import Foundation
import NIOCore
import TonearmCore
import TonearmFrontEnd
import TonearmLibrary
import TonearmMedia
import TonearmPlayer

/// The music directory, read from the directory itself, and stored playlists. Database commands
/// that need a music database answer as an MPD with an empty database does.
extension MPDCommands {
    static let libraryCommands: [MPDCommand] = [
        MPDCommand("lsinfo", .read, 0...1, .later { call throws(MPDError) in
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
        MPDCommand("listall", .read, 0...1, .later { call throws(MPDError) in
            try await listAll(call, withTags: false)
        }),
        MPDCommand("listallinfo", .read, 0...1, .later { call throws(MPDError) in
            try await listAll(call, withTags: true)
        }),
        MPDCommand("listplaylists", .read, 0...0, .later { call throws(MPDError) in
            let library = call.environment.library
            return try await library.perform { () throws(MPDError) in
                var r = MPDResponse()
                writeStoredPlaylists(library, into: &r)
                return r.buffer
            }
        }),
        MPDCommand("listplaylistinfo", .read, 1...1, .later { call throws(MPDError) in
            try await playlistContents(call, withTags: true)
        }),
        MPDCommand("listplaylist", .read, 1...1, .later { call throws(MPDError) in
            try await playlistContents(call, withTags: false)
        }),
        MPDCommand("load", .control, 1...3, .later { call throws(MPDError) in
            let library = call.environment.library
            var entries = try await library.perform { () throws(MPDError) in try library.playlistEntries(call[0], for: call.peer) }
            if call.count >= 2 {
                // A range beyond the playlist is cut to it, as MPD does.
                let range = try call.range(1)
                entries = Array(entries[min(range.lowerBound, entries.count)..<min(range.upperBound, entries.count)])
            }
            let position = call.count == 3 ? try call.unsigned(2, max: call.player.queue.items.count) : nil
            do throws(PlayerError) { _ = try call.player.add(entries, at: position) } catch { try settle(error) }
            return nil
        }),
        // No database: the answers of an MPD whose database is empty.
        MPDCommand("find", .read, 1...Int(Int32.max), .now { _, _ in }),
        MPDCommand("search", .read, 1...Int(Int32.max), .now { _, _ in }),
        MPDCommand("findadd", .control, 1...Int(Int32.max), .now { _, _ in }),
        MPDCommand("searchadd", .control, 1...Int(Int32.max), .now { _, _ in }),
        MPDCommand("list", .read, 1...Int(Int32.max), .now { call, _ throws(MPDError) in
            guard call[0].caseInsensitiveCompare("file") == .orderedSame
                    || MediaTag.tag(named: call[0]) != nil else {
                throw .argument("Unknown tag type: \(call[0])")
            }
        }),
        MPDCommand("count", .read, 1...Int(Int32.max), .now { _, r in
            r.add("songs", 0)
            r.add("playtime", 0)
        }),
        MPDCommand("update", .control, 0...1, .now { call, r throws(MPDError) in try update(call, rescan: false, into: &r) }),
        MPDCommand("rescan", .control, 0...1, .now { call, r throws(MPDError) in try update(call, rescan: true, into: &r) }),
    ]

    /// A scan of the music directory (or of one path in it) by the library, on its own thread;
    /// the reply is the job's number. `rescan` reads unchanged files again.
    private static func update(_ call: MPDCall, rescan: Bool, into r: inout MPDResponse) throws(MPDError) {
        let library = call.environment.library
        guard library.root != nil else { throw MPDError(.noExist, "No database") }
        let path = call.count == 1 ? normalized(call[0]) : ""
        if path.hasPrefix("/") || path.split(separator: "/").contains("..") || SourcePolicy.uriScheme(of: path) != nil {
            throw .argument("Malformed path")
        }
        guard let database = library.database else {
            // A music directory without a database (it could not be opened): nothing to scan,
            // the job is numbered and announced as MPD does for a database with nothing new.
            r.add("updating_db", call.environment.nextUpdateJob())
            return
        }
        let trimmed = path.split(separator: "/", omittingEmptySubsequences: true).joined(separator: "/")
        r.add("updating_db", database.update(trimmed, rescan: rescan))
    }

    /// `playlist:` and `Last-Modified:` of each stored playlist (the library's thread).
    private static func writeStoredPlaylists(_ library: MPDLibrary, into r: inout MPDResponse) {
        for playlist in library.playlists() {
            r.add("playlist", playlist.name)
            r.add("Last-Modified", MPDEnvironment.timestamp(playlist.modified))
        }
    }

    /// Clients send "/" or "" for the root.
    private static func normalized(_ uri: String) -> String {
        uri == "/" ? "" : uri
    }

    /// One entry of the database, as `lsinfo`/`listallinfo` (`withTags`) or `listall` show it.
    private static func write(_ entry: LibraryEntry, withTags: Bool, shown: MPDTags, _ environment: MPDEnvironment,
                              into r: inout MPDResponse) {
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

    private static func listAll(_ call: MPDCall, withTags: Bool) async throws(MPDError) -> ByteBuffer? {
        let uri = call.count == 1 ? normalized(call[0]) : ""
        let environment = call.environment
        return try await environment.library.perform { () throws(MPDError) in
            var r = MPDResponse()
            if environment.library.databaseURI(uri) {
                try environment.library.databaseWalk(uri, withTags: withTags) { entries in
                    for entry in entries { write(entry, withTags: withTags, shown: call.tags, environment, into: &r) }
                }
                return r.buffer
            }
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
    }

    private static func playlistContents(_ call: MPDCall, withTags: Bool) async throws(MPDError) -> ByteBuffer? {
        let environment = call.environment
        let library = environment.library
        return try await library.perform { () throws(MPDError) in
            var r = MPDResponse()
            for entry in try library.playlistEntries(call[0], for: call.peer) {
                let uri = library.uri(for: entry.url)
                var info = stat()
                if withTags, stat(entry.url.path, &info) == 0 {
                    environment.writeLibrarySong(uri: uri, url: entry.url, modified: Int(info.st_mtim.tv_sec), shown: call.tags, into: &r)
                } else {
                    r.add("file", uri)
                }
            }
            return r.buffer
        }
    }
}
