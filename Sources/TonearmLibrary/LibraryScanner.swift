import CLinux
import Foundation
import GRDB
import Glibc
import Logging
import TonearmMedia

/// What one scan did.
package struct ScanOutcome: Sendable, Equatable {
    package var added = 0
    package var changed = 0
    package var removed = 0
    package var failed = 0
    package var seconds = 0.0
    /// Directories below the music directory found offline (a mount point, or a link to one,
    /// empty or unreachable), with why: what the database holds under them is kept.
    package var offline: [String: String] = [:]
    /// Mount points found in place, and directories removed: offline no longer.
    var reached: Set<String> = []
    package var changedAnything: Bool { added + changed + removed + failed > 0 }
}

/// Why a scan stopped without touching the database.
package struct LibraryOffline: Error, Sendable, CustomStringConvertible {
    package let description: String
}

/// Walks the music directory and brings the database in line with it, from the library's scan
/// thread, with its crew of threads beside it (`ScanWalk`). A file whose size and modification time are unchanged is not
/// opened again; a file that cannot be read as media is kept as failed until it changes.
/// When the directory looks gone (missing, empty while the database is not, or an I/O error
/// that says the mount went away), nothing is removed: an unplugged disk does not erase the
/// library. The same holds below it for each directory that was on a file system of its own
/// when last scanned (a share mounted there, or a link to one: `directory.mount`): empty,
/// unreachable, or a link to nothing, it is offline and kept, and the rest is scanned. Only
/// removing its name (the mount point or the link) removes its songs.
struct LibraryScanner {
    let root: String
    let database: LibraryDatabase
    /// The threads that walk the tree and read the tags of the files that changed.
    let crew: ScanCrew
    let followSymlinks: Bool
    let logger: Logger

    /// One change for the writer, by paths (the writer finds the rows).
    enum Change {
        /// `mount`: on another file system than its parent; nil: as recorded.
        case directory(path: String, mtime: Int, mount: Bool?)
        /// `new`: the database has no row for it yet. `folded`: each tag value folded for
        /// search (`LibraryFolding`), done by the thread that read it rather than the writer.
        case song(directory: String, name: String, size: Int, mtime: Int, tags: MediaTags?, folded: [String], new: Bool)
        case removeSong(directory: String, name: String)
        case removeDirectory(path: String)
    }

    /// What the database holds of one directory.
    struct Known {
        /// The directory has a row, with this modification time.
        var mtime: Int?
        var songs: [String: (size: Int, mtime: Int, failed: Bool)] = [:]
        /// Subdirectories, each with whether it was a mount point when last scanned.
        var directories: [String: Bool] = [:]
        /// The directory was a mount point when last scanned.
        var mount = false
    }

    /// What an I/O error says when a mount went away (a share whose server is gone).
    static let mountGone: Set<Int32> = [ENOTCONN, EIO, ESTALE, ENODEV]

    /// Brings `start` (relative; "" for the music directory) and what is under it in line.
    /// Not `recursive`: only `start`'s own entries, and subdirectories the database does not
    /// know yet (a watched change names the one directory it happened in).
    func scan(under start: String, rescan: Bool, now: Int, recursive: Bool = true) throws -> ScanOutcome {
        var start = start
        var recursive = recursive
        let began = Date()
        var rootInfo = stat()
        guard stat(root, &rootInfo) == 0, rootInfo.st_mode & S_IFMT == S_IFDIR else {
            throw LibraryOffline(description: "the music directory \(root) is not there (\(String(cString: strerror(errno))))")
        }
        let songsKnown = try database.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM song") ?? 0 }
        if songsKnown > 0, try entries(of: root).isEmpty {
            throw LibraryOffline(description: "the music directory \(root) is empty (an unmounted disk?)")
        }
        // A directory gone since (a watched deletion names each level of a removed tree; an
        // unmounted share each of its directories): the nearest one above that is there is
        // scanned for its own entries, which removes it, or finds it offline below a mount
        // point that went away; nothing on the way to it is made again.
        var startInfo = stat()
        while !(stat(absolute(start), &startInfo) == 0 && startInfo.st_mode & S_IFMT == S_IFDIR) {
            guard !start.isEmpty else { return ScanOutcome() }
            start = Self.parentPath(start)
            recursive = false
        }
        var startParent = stat()
        let startParentDevice: UInt64? =
            !start.isEmpty && stat(absolute(Self.parentPath(start)), &startParent) == 0
            ? UInt64(startParent.st_dev) : nil
        // The directories on the way to `start` exist in the database too.
        var ancestors: [String] = [""]
        for component in start.split(separator: "/") {
            ancestors.append(ancestors.count == 1 ? String(component) : ancestors.last! + "/" + component)
        }
        let ancestorRows = ancestors.dropLast().map { path in
            Change.directory(path: path, mtime: mtime(of: absolute(path)) ?? 0, mount: nil)
        }

        // A whole tree's rows are read at once: a rescan then compares each entry with memory.
        let knownTree = recursive ? try self.knownTree(under: start) : nil
        if recursive { try database.setWriterCache(kibibytes: 32 * 1024) }
        defer {
            if recursive {
                try? database.setWriterCache(kibibytes: 2000)
                database.tagIndex.trim()
                // What the scan's threads and the cache freed goes back to the system: glibc
                // keeps a thread's freed memory for its next allocation otherwise.
                tonearm_release_freed_memory()
            }
        }
        let walk = ScanWalk(
            self, start: start, startParentDevice: startParentDevice, recursive: recursive, rescan: rescan, now: now,
            knownTree: knownTree, changes: ancestorRows)
        var outcome = try walk.run(on: crew)
        if outcome.changedAnything {
            try database.write { db in
                try db.execute(sql: "INSERT OR REPLACE INTO library_state(key, value) VALUES ('updated', ?)", arguments: [now])
            }
        }
        outcome.seconds = Date().timeIntervalSince(began)
        return outcome
    }

    func absolute(_ path: String) -> String { path.isEmpty ? root : root + "/" + path }

    private func mtime(of path: String) -> Int? {
        var info = stat()
        return stat(path, &info) == 0 ? Int(info.st_mtim.tv_sec) : nil
    }

    /// A directory's names, hidden ones left out. An error that says the mount went away stops
    /// the scan; any other (a directory that cannot be read) lists nothing.
    func entries(of path: String) throws -> [String] {
        guard let handle = opendir(path) else {
            let code = errno
            if [ENOTCONN, EIO, ESTALE, ENODEV].contains(code) {
                throw LibraryOffline(description: "\(path): \(String(cString: strerror(code))) (the mount went away?)")
            }
            logger.warning("cannot read a directory", metadata: ["directory": "\(path)", "error": "\(String(cString: strerror(code)))"])
            return []
        }
        defer { closedir(handle) }
        var names: [String] = []
        errno = 0
        while let entry = readdir(handle) {
            let bytes = withUnsafeBytes(of: entry.pointee.d_name) { Array($0.prefix { $0 != 0 }) }
            // MPD's protocol, the database and JSON carry UTF-8 only: a name in another encoding
            // cannot be named by any client, so it is skipped, and said so (a repaired name
            // would name no file on disk).
            guard let name = String(validating: bytes, as: UTF8.self) else {
                let shown = bytes.map { $0 < 0x80 && $0 >= 0x20 ? String(UnicodeScalar($0)) : String(format: "\\x%02X", $0) }.joined()
                logger.warning("skipping a file name that is not UTF-8", metadata: ["directory": "\(path)", "name": "\(shown)"])
                continue
            }
            if !name.hasPrefix(".") { names.append(name) }
        }
        if [ENOTCONN, EIO, ESTALE].contains(errno) {
            throw LibraryOffline(description: "\(path): \(String(cString: strerror(errno))) (the mount went away?)")
        }
        return names.sorted()
    }

    func known(in directory: String) throws -> Known {
        try database.read { db in
            var known = Known()
            guard let row = try Row.fetchOne(db, sql: "SELECT id, mount, mtime FROM directory WHERE path = ?", arguments: [directory])
            else { return known }
            let id: Int64 = row[0]
            known.mount = row[1]
            known.mtime = row[2]
            let songs = try Row.fetchCursor(db, sql: "SELECT name, size, mtime, failed FROM song WHERE directory_id = ?", arguments: [id])
            while let row = try songs.next() {
                known.songs[row[0]] = (row[1], row[2], row[3])
            }
            let directories = try Row.fetchCursor(db, sql: "SELECT path, mount FROM directory WHERE parent_id = ?", arguments: [id])
            while let row = try directories.next() {
                known.directories[row[0]] = row[1]
            }
            return known
        }
    }

    /// What the database holds of `start` and every directory under it, by path: two passes,
    /// one over the directories and one over their songs.
    private func knownTree(under start: String) throws -> [String: Known] {
        try database.read { db in
            let within = start.isEmpty ? "" : "WHERE directory.path = ? OR directory.path LIKE ? ESCAPE '\\'"
            let arguments: StatementArguments = start.isEmpty ? [] : [start, Self.likeEscaped(start) + "/%"]
            var tree: [String: Known] = [:]
            var paths: [Int64: String] = [:]
            var parents: [(path: String, parent: Int64, mount: Bool)] = []
            let directories = try Row.fetchCursor(
                db, sql: "SELECT id, path, parent_id, mount, mtime FROM directory \(within)", arguments: arguments)
            while let row = try directories.next() {
                let path: String = row[1]
                paths[row[0]] = path
                tree[path, default: Known()].mount = row[3]
                tree[path, default: Known()].mtime = row[4]
                if let parent: Int64 = row[2] { parents.append((path, parent, row[3])) }
            }
            for (path, parent, mount) in parents {
                guard let parentPath = paths[parent] else { continue }
                tree[parentPath, default: Known()].directories[path] = mount
            }
            let songs = try Row.fetchCursor(
                db,
                sql: """
                    SELECT directory.path, song.name, song.size, song.mtime, song.failed
                    FROM song JOIN directory ON song.directory_id = directory.id \(within)
                    """, arguments: arguments)
            while let row = try songs.next() {
                tree[row[0], default: Known()].songs[row[1]] = (row[2], row[3], row[4])
            }
            return tree
        }
    }

    func songs(under directory: String) throws -> Int {
        try database.read { db in
            try Int.fetchOne(
                db,
                sql: """
                    SELECT COUNT(*) FROM song JOIN directory ON song.directory_id = directory.id
                    WHERE directory.path = ? OR directory.path LIKE ? ESCAPE '\\'
                    """, arguments: [directory, Self.likeEscaped(directory) + "/%"]) ?? 0
        }
    }

    static func likeEscaped(_ text: String) -> String {
        text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "%", with: "\\%")
            .replacingOccurrences(of: "_", with: "\\_")
    }

    /// Writes `changes` (the writer thread, one transaction); returns what the tag index must
    /// learn of them once they are committed.
    static func apply(_ changes: [Change], now: Int, _ db: Database) throws -> [LibraryTagIndex.Update] {
        var updates: [LibraryTagIndex.Update] = []
        var directoryIDs: [String: Int64] = [:]
        func directoryID(_ path: String) throws -> Int64? {
            if let id = directoryIDs[path] { return id }
            let id = try Int64.fetchOne(db.cachedStatement(sql: "SELECT id FROM directory WHERE path = ?"), arguments: [path])
            if let id { directoryIDs[path] = id }
            return id
        }
        // Made for this batch, not taken from GRDB's cache: a statement keeps its last arguments,
        // and a cached one would hold a song's tag list (`Data`) until the process ends, where
        // LeakSanitizer, which cannot follow `Data`'s inline form, calls it a leak.
        let upsertSong = try db.makeStatement(
            sql: """
                INSERT INTO song(directory_id, name, size, mtime, added, duration, format, failed, tags)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(directory_id, name) DO UPDATE SET size = excluded.size, mtime = excluded.mtime,
                    duration = excluded.duration, format = excluded.format, failed = excluded.failed,
                    tags = excluded.tags
                RETURNING id
                """)
        for change in changes {
            switch change {
            case .directory(let path, let mtime, let mount):
                let parent = path.isEmpty ? nil : try directoryID(parentPath(path))
                try db.cachedStatement(
                    sql: """
                        INSERT INTO directory(path, parent_id, mtime, mount) VALUES (?, ?, ?, ?)
                        ON CONFLICT(path) DO UPDATE SET mtime = excluded.mtime,
                            mount = CASE WHEN ? THEN excluded.mount ELSE directory.mount END
                        """
                ).execute(arguments: [path, parent, mtime, mount ?? false, mount != nil])
            case .song(let directory, let name, let size, let mtime, let tags, let folded, let new):
                guard let directoryID = try directoryID(directory) else { continue }
                let songID = try Int64.fetchOne(
                    upsertSong,
                    arguments: [
                        directoryID, name, size, mtime, now, tags?.duration, tags?.audioFormat, tags == nil,
                        tags.map { Data(StoredTagList.encode($0.entries)) },
                    ])
                guard let songID else { continue }
                updates.append(tags.map { .song(songID, duration: $0.duration, $0.entries) } ?? .removed([songID]))
                if !new { try db.cachedStatement(sql: "DELETE FROM song_tag WHERE song_id = ?").execute(arguments: [songID]) }
                let insert = try db.cachedStatement(sql: "INSERT INTO song_tag(song_id, seq, tag, value, folded) VALUES (?, ?, ?, ?, ?)")
                for (seq, (entry, folded)) in zip(tags?.entries ?? [], folded).enumerated() {
                    guard let code = StoredTag.code(entry.tag) else { continue }
                    try insert.execute(arguments: [songID, seq, code, entry.value, folded])
                }
            case .removeSong(let directory, let name):
                guard let directoryID = try directoryID(directory) else { continue }
                let gone = try Int64.fetchAll(
                    db.cachedStatement(sql: "DELETE FROM song WHERE directory_id = ? AND name = ? RETURNING id"),
                    arguments: [directoryID, name])
                updates.append(.removed(gone))
            case .removeDirectory(let path):
                // Its songs and its subdirectories' go with it (ON DELETE CASCADE).
                let gone = try Int64.fetchAll(
                    db,
                    sql: """
                        SELECT song.id FROM song JOIN directory ON song.directory_id = directory.id
                        WHERE directory.path = ? OR directory.path LIKE ? ESCAPE '\\'
                        """, arguments: [path, likeEscaped(path) + "/%"])
                updates.append(.removed(gone))
                try db.execute(sql: "DELETE FROM directory WHERE path = ?", arguments: [path])
                directoryIDs[path] = nil
            }
        }
        return updates
    }

    static func parentPath(_ path: String) -> String {
        // By bytes: a `Character` search breaks the whole path into graphemes first.
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return "" }
        return String(path[..<slash])
    }
}
