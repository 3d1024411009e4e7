import Foundation
import GRDB
import TonearmMedia

/// A song as the library keeps it: its URI (relative to the music directory), when its file
/// last changed, its length, audio format and tags.
package struct LibrarySong: Sendable, Equatable {
    package let uri: String
    package let modified: Int
    package let duration: Double?
    package let format: String?
    package let tags: [MediaTags.Entry]
}

extension LibrarySong {
    /// The song's tags as the player keeps a file's.
    package var mediaTags: MediaTags {
        var tags = MediaTags(entries: tags, duration: duration)
        tags.audioFormat = format
        tags.modified = modified
        return tags
    }
}

/// One line of a listing: a directory (URI, modification time) or a song.
package enum LibraryEntry: Sendable, Equatable {
    case directory(uri: String, modified: Int)
    case song(LibrarySong)
}

/// What `stats` shows of the library.
package struct LibraryStats: Sendable, Equatable {
    package var songs = 0
    package var artists = 0
    package var albums = 0
    /// Seconds of music in the library.
    package var playtime = 0.0
    /// When a scan last changed the database (Unix time); 0: never.
    package var updated = 0

    package init() {}
}

/// Reads for listings, on the caller's thread (a snapshot of the last committed scan batch).
struct LibraryReader {
    let database: LibraryDatabase

    /// From the tag index when it is loaded (clients ask `stats` on every connection, and
    /// SQL's distinct counts read two whole index ranges), else from SQL.
    func stats() throws -> LibraryStats {
        if let counted = database.tagIndex.read({ LibraryIndexedAggregates(state: $0).stats() }) {
            var stats = LibraryStats()
            (stats.songs, stats.playtime, stats.artists, stats.albums) = counted
            stats.updated = try database.read { db in
                try Int.fetchOne(db, sql: "SELECT value FROM library_state WHERE key = 'updated'") ?? 0
            }
            return stats
        }
        return try statsInSQL()
    }

    /// `stats` from the tables themselves.
    func statsInSQL() throws -> LibraryStats {
        try database.read { db in
            var stats = LibraryStats()
            stats.songs = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM song WHERE failed = 0") ?? 0
            stats.playtime = try Double.fetchOne(db, sql: "SELECT TOTAL(duration) FROM song WHERE failed = 0") ?? 0
            let distinct = "SELECT COUNT(DISTINCT value) FROM song_tag WHERE tag = ?"
            stats.artists = try Int.fetchOne(db, sql: distinct, arguments: [StoredTag.code(.artist)]) ?? 0
            stats.albums = try Int.fetchOne(db, sql: distinct, arguments: [StoredTag.code(.album)]) ?? 0
            stats.updated = try Int.fetchOne(db, sql: "SELECT value FROM library_state WHERE key = 'updated'") ?? 0
            return stats
        }
    }

    /// A directory's songs, then its subdirectories (MPD's `lsinfo` order), or the one song a
    /// song's URI names; nil when the library has neither.
    func list(_ uri: String, withTags: Bool) throws -> [LibraryEntry]? {
        try database.read { db in
            let find = try db.cachedStatement(sql: "SELECT id FROM directory WHERE path = ?")
            let pass = LibraryPassReader(db: db)
            var buffer = LibraryPassBuffer()
            if let id = try Int64.fetchOne(find, arguments: [uri]) {
                try pass.read(directory: id, withTags: withTags, into: &buffer)
                var entries: [LibraryEntry] = []
                buffer.visit(directory: uri) { entries.append(.song($0.song)) }
                return try entries + subdirectories(of: id, db)
            }
            // The music directory always exists, before the first scan has written its row too
            // (MPD answers an empty listing then, not "No such directory").
            if uri.isEmpty { return [] }
            let directory = LibraryScanner.parentPath(uri)
            guard let id = try Int64.fetchOne(find, arguments: [directory]) else { return nil }
            let name = directory.isEmpty ? uri : String(decoding: uri.utf8.dropFirst(directory.utf8.count + 1), as: UTF8.self)
            try pass.read(directory: id, only: name, withTags: withTags, into: &buffer)
            return buffer.song(named: name, in: directory).map { [.song($0)] }
        }
    }

    /// The songs the library holds of `uris` (with their tags), in their order (nil: not a
    /// song of the library); one read. Neighbouring URIs of one directory (an album added song
    /// by song) are read together, by a pass over the directory; no URI is hashed.
    func songs(at uris: [String]) throws -> [LibrarySong?] {
        try database.read { db in
            var found = [LibrarySong?](repeating: nil, count: uris.count)
            let pass = LibraryPassReader(db: db)
            var buffer = LibraryPassBuffer()
            let find = try db.cachedStatement(sql: "SELECT id FROM directory WHERE path = ?")
            var start = 0
            while start < uris.count {
                let directory = LibraryScanner.parentPath(uris[start])
                var end = start + 1
                while end < uris.count, LibraryScanner.parentPath(uris[end]).hasSameBytes(as: directory) { end += 1 }
                defer { start = end }
                guard let id = try Int64.fetchOne(find, arguments: [directory]) else { continue }
                let names = uris[start..<end].map { directory.isEmpty ? $0 : String($0.utf8.dropFirst(directory.utf8.count + 1))! }
                try pass.read(directory: id, only: names.count == 1 ? names[0] : nil, withTags: true, into: &buffer)
                for (offset, name) in names.enumerated() {
                    found[start + offset] = buffer.song(named: name, in: directory)
                }
            }
            return found
        }
    }

    /// Everything under `uri`, depth first as MPD walks it (the directory itself unless it is
    /// the root, its songs, then each subdirectory followed by what it holds), handed to `visit`
    /// a part at a time. Returns false when the library has no such directory or song.
    func walk(_ uri: String, withTags: Bool, _ visit: ([LibraryEntry]) throws -> Void) throws -> Bool {
        guard var walk = try startWalk(uri, withTags: withTags) else { return false }
        while !walk.isDone {
            let entries = try next(&walk, atLeast: 1)
            if !entries.isEmpty { try visit(entries) }
        }
        return true
    }

    /// A walk of `uri` in `walk`'s order, to be taken a part at a time (`next`); nil when the
    /// library has no such directory or song.
    func startWalk(_ uri: String, withTags: Bool) throws -> LibraryWalk? {
        try database.read { db in
            let pass = LibraryPassReader(db: db)
            if let directories = try pass.directories(under: uri) {
                return LibraryWalk(withTags: withTags, directories: directories, linesFrom: uri.isEmpty ? 1 : 0, only: nil)
            }
            // A song's URI: its directory, that one song only.
            let parent = LibraryScanner.parentPath(uri)
            let name = parent.isEmpty ? uri : String(uri.dropFirst(parent.count + 1))
            guard
                let row = try Row.fetchOne(
                    db,
                    sql:
                        "SELECT directory.id, directory.mtime FROM directory JOIN song ON song.directory_id = directory.id WHERE path = ? AND name = ? AND failed = 0",
                    arguments: [parent, name])
            else { return nil }
            let directory = (id: row[0] as Int64, directory: LibraryPassDirectory(uri: parent, modified: row[1]))
            return LibraryWalk(withTags: withTags, directories: [directory], linesFrom: 1, only: name)
        }
    }

    /// The walk's next part, handed to `visit` an entry at a time: whole directories until at
    /// least `count` entries were visited or the walk is done. One read per part: no reader is
    /// held between parts, and a part shows the database as one commit left it.
    func next(_ walk: inout LibraryWalk, atLeast count: Int, _ visit: (LibraryPassItem) throws -> Void) throws {
        try database.read { db in
            let pass = LibraryPassReader(db: db)
            var buffer = LibraryPassBuffer()
            var visited = 0
            while visited < count, walk.position < walk.directories.count {
                let (id, directory) = walk.directories[walk.position]
                if walk.position >= walk.linesFrom {
                    try visit(.directory(directory))
                    visited += 1
                }
                walk.position += 1
                try pass.read(directory: id, only: walk.only, withTags: walk.withTags, into: &buffer)
                try buffer.visit(directory: directory.uri) { song in
                    try visit(.song(song))
                    visited += 1
                }
            }
        }
    }

    /// The walk's next entries, as values: at least `count` unless the walk is done.
    func next(_ walk: inout LibraryWalk, atLeast count: Int) throws -> [LibraryEntry] {
        var entries: [LibraryEntry] = []
        try next(&walk, atLeast: count) { item in
            switch item {
            case .directory(let directory): entries.append(.directory(uri: directory.uri, modified: directory.modified))
            case .song(let song): entries.append(.song(song.song))
            }
        }
        return entries
    }

    private func subdirectories(of id: Int64, _ db: Database) throws -> [LibraryEntry] {
        try Row.fetchAll(db.cachedStatement(sql: "SELECT path, mtime FROM directory WHERE parent_id = ? ORDER BY path"), arguments: [id])
            .map { .directory(uri: $0[0], modified: $0[1]) }
    }
}

/// One entry of a pass: a directory's line, or a song read in place.
package enum LibraryPassItem {
    case directory(LibraryPassDirectory)
    case song(LibrarySongView)
}

/// A walk of the library taken a part at a time (`Library.next`): the directories it lists in
/// MPD's order, read when it started, and how far it has come. A value the caller keeps between
/// parts, so no reader is held meanwhile; a directory removed since lists no songs.
package struct LibraryWalk: Sendable {
    let withTags: Bool
    let directories: [(id: Int64, directory: LibraryPassDirectory)]
    /// The first directory whose own line is listed (the root's never is, nor a lone song's).
    let linesFrom: Int
    /// A song's URI walked alone: its name in its directory.
    let only: String?
    var position = 0

    /// Nothing is left.
    package var isDone: Bool { position >= directories.count }
}
