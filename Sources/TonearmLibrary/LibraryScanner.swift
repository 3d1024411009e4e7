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

/// Walks the music directory and brings the database in line with it, on the calling thread
/// (the library's scan thread). A file whose size and modification time are unchanged is not
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
    /// Reads the tags of the files that changed.
    let tags: TagReaderPool
    let followSymlinks: Bool
    let logger: Logger

    /// Songs read (at once, on the pool's threads) before their rows are written in one transaction.
    private static let batchSize = 256

    /// One change for the writer, by paths (the writer finds the rows).
    private enum Change {
        /// `mount`: on another file system than its parent; nil: as recorded.
        case directory(path: String, mtime: Int, mount: Bool?)
        case song(directory: String, name: String, size: Int, mtime: Int, tags: MediaTags?)
        case removeSong(directory: String, name: String)
        case removeDirectory(path: String)
    }

    /// What the database holds of one directory.
    private struct Known {
        var songs: [String: (size: Int, mtime: Int, failed: Bool)] = [:]
        /// Subdirectories, each with whether it was a mount point when last scanned.
        var directories: [String: Bool] = [:]
        /// The directory was a mount point when last scanned.
        var mount = false
    }

    /// What an I/O error says when a mount went away (a share whose server is gone).
    private static let mountGone: Set<Int32> = [ENOTCONN, EIO, ESTALE, ENODEV]

    /// Brings `start` (relative; "" for the music directory) and what is under it in line.
    /// Not `recursive`: only `start`'s own entries, and subdirectories the database does not
    /// know yet (a watched change names the one directory it happened in).
    func scan(under start: String, rescan: Bool, now: Int, recursive: Bool = true) throws -> ScanOutcome {
        var start = start
        var recursive = recursive
        let began = Date()
        var outcome = ScanOutcome()
        var rootInfo = stat()
        guard stat(root, &rootInfo) == 0, rootInfo.st_mode & S_IFMT == S_IFDIR else {
            throw LibraryOffline(description: "the music directory \(root) is not there (\(String(cString: strerror(errno))))")
        }
        let songsKnown = try database.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM song") ?? 0 }
        if songsKnown > 0, try entries(of: root).isEmpty {
            throw LibraryOffline(description: "the music directory \(root) is empty (an unmounted disk?)")
        }
        var pending: [Change] = []
        func flush() throws {
            guard !pending.isEmpty else { return }
            let changes = pending
            pending.removeAll(keepingCapacity: true)
            try database.write { db in try Self.apply(changes, now: now, db) }
        }

        // A directory gone since (a watched deletion names each level of a removed tree; an
        // unmounted share each of its directories): the nearest one above that is there is
        // scanned for its own entries, which removes it, or finds it offline below a mount
        // point that went away; nothing on the way to it is made again.
        var startInfo = stat()
        while !(stat(absolute(start), &startInfo) == 0 && startInfo.st_mode & S_IFMT == S_IFDIR) {
            guard !start.isEmpty else { return outcome }
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
        for path in ancestors.dropLast() {
            pending.append(.directory(path: path, mtime: mtime(of: absolute(path)) ?? 0, mount: nil))
        }

        var visited = Set<[UInt64]>()
        // Each directory with its parent's device: one on another is a mount point.
        var stack: [(directory: String, parentDevice: UInt64?)] = [(start, startParentDevice)]
        while let next = stack.popLast() {
            let (directory, parentDevice) = next
            let path = absolute(directory)
            var info = stat()
            guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else {
                continue
            }
            guard visited.insert([UInt64(info.st_dev), UInt64(info.st_ino)]).inserted else {
                logger.info("a directory link leads back up the tree; skipped", metadata: ["directory": "\(directory)"])
                continue
            }
            let known = try self.known(in: directory)
            let names: [String]
            do {
                names = try entries(of: path)
            } catch let gone as LibraryOffline where !directory.isEmpty {
                // Below the music directory, a mount that went away: kept whole, the rest scanned.
                outcome.offline[directory] = gone.description
                continue
            }
            // The same rule as the music directory's for a mount point, one that comes up empty
            // or is not mounted (an empty directory of its parent's file system).
            if known.mount, names.isEmpty, try songs(under: directory) > 0 {
                outcome.offline[directory] = "\(path) is empty (a share or disk not mounted?)"
                continue
            }
            let mount = parentDevice.map { $0 != UInt64(info.st_dev) } ?? false
            if mount || known.mount { outcome.reached.insert(directory) }
            pending.append(.directory(path: directory, mtime: Int(info.st_mtim.tv_sec), mount: mount))
            var seenSongs = Set<String>()
            var seenDirectories = Set<String>()
            var subdirectories: [(directory: String, parentDevice: UInt64?)] = []
            // Files new or changed since the last scan, read a batch at a time.
            var toRead: [(name: String, size: Int, mtime: Int, failedBefore: Bool?)] = []
            func readChanged() throws {
                let read = tags.read(toRead.map { URL(fileURLWithPath: path + "/" + $0.name, isDirectory: false) })
                for (file, tags) in zip(toRead, read) {
                    if tags == nil {
                        outcome.failed += 1
                        if file.failedBefore != true {
                            let child = directory.isEmpty ? file.name : directory + "/" + file.name
                            logger.warning("cannot read as media; kept as failed until it changes", metadata: ["file": "\(child)"])
                        }
                    } else if file.failedBefore == nil {
                        outcome.added += 1
                    } else {
                        outcome.changed += 1
                    }
                    pending.append(.song(directory: directory, name: file.name, size: file.size, mtime: file.mtime, tags: tags))
                }
                toRead.removeAll(keepingCapacity: true)
                try flush()
            }
            for name in names {
                let child = directory.isEmpty ? name : directory + "/" + name
                let childPath = path + "/" + name
                var childInfo = stat()
                var failure: Int32 = 0
                if lstat(childPath, &childInfo) != 0 {
                    failure = errno
                } else if childInfo.st_mode & S_IFMT == S_IFLNK {
                    guard followSymlinks else { continue }
                    if stat(childPath, &childInfo) != 0 { failure = errno }
                }
                if failure != 0 {
                    // A known mount point that cannot be reached (a link to a disk not mounted,
                    // a share whose server went away) is offline, not gone.
                    if let wasMount = known.directories[child], wasMount || Self.mountGone.contains(failure),
                        try songs(under: child) > 0
                    {
                        seenDirectories.insert(child)
                        outcome.offline[child] = "\(childPath): \(String(cString: strerror(failure))) (the mount went away?)"
                    }
                    continue
                }
                switch childInfo.st_mode & S_IFMT {
                case S_IFDIR:
                    seenDirectories.insert(child)
                    if recursive || directory != start || known.directories[child] == nil {
                        subdirectories.append((child, UInt64(info.st_dev)))
                    }
                case S_IFREG where LibraryFiles.isSong(name):
                    seenSongs.insert(name)
                    let size = Int(childInfo.st_size)
                    let modified = Int(childInfo.st_mtim.tv_sec)
                    let before = known.songs[name]
                    if !rescan, let before, before.size == size, before.mtime == modified { continue }
                    toRead.append((name, size, modified, before.map(\.failed)))
                    if toRead.count >= Self.batchSize { try readChanged() }
                default:
                    break
                }
            }
            if !toRead.isEmpty { try readChanged() }
            for name in known.songs.keys where !seenSongs.contains(name) {
                pending.append(.removeSong(directory: directory, name: name))
                outcome.removed += 1
            }
            for gone in Set(known.directories.keys).subtracting(seenDirectories) {
                outcome.removed += try songs(under: gone)
                outcome.reached.insert(gone)
                pending.append(.removeDirectory(path: gone))
            }
            // Depth first, in name order.
            stack.append(contentsOf: subdirectories.sorted { $0.directory < $1.directory }.reversed())
        }
        try flush()
        if outcome.changedAnything {
            try database.write { db in
                try db.execute(sql: "INSERT OR REPLACE INTO library_state(key, value) VALUES ('updated', ?)", arguments: [now])
            }
        }
        outcome.seconds = Date().timeIntervalSince(began)
        return outcome
    }

    private func absolute(_ path: String) -> String { path.isEmpty ? root : root + "/" + path }

    private func mtime(of path: String) -> Int? {
        var info = stat()
        return stat(path, &info) == 0 ? Int(info.st_mtim.tv_sec) : nil
    }

    /// A directory's names, hidden ones left out. An error that says the mount went away stops
    /// the scan; any other (a directory that cannot be read) lists nothing.
    private func entries(of path: String) throws -> [String] {
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

    private func known(in directory: String) throws -> Known {
        try database.read { db in
            var known = Known()
            guard let row = try Row.fetchOne(db, sql: "SELECT id, mount FROM directory WHERE path = ?", arguments: [directory]) else {
                return known
            }
            let id: Int64 = row[0]
            known.mount = row[1]
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

    private func songs(under directory: String) throws -> Int {
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

    /// Writes `changes` (the writer thread, one transaction).
    private static func apply(_ changes: [Change], now: Int, _ db: Database) throws {
        var directoryIDs: [String: Int64] = [:]
        func directoryID(_ path: String) throws -> Int64? {
            if let id = directoryIDs[path] { return id }
            let id = try Int64.fetchOne(db, sql: "SELECT id FROM directory WHERE path = ?", arguments: [path])
            if let id { directoryIDs[path] = id }
            return id
        }
        for change in changes {
            switch change {
            case .directory(let path, let mtime, let mount):
                let parent = path.isEmpty ? nil : try directoryID(parentPath(path))
                try db.execute(
                    sql: """
                        INSERT INTO directory(path, parent_id, mtime, mount) VALUES (?, ?, ?, ?)
                        ON CONFLICT(path) DO UPDATE SET mtime = excluded.mtime,
                            mount = CASE WHEN ? THEN excluded.mount ELSE directory.mount END
                        """, arguments: [path, parent, mtime, mount ?? false, mount != nil])
            case .song(let directory, let name, let size, let mtime, let tags):
                guard let directoryID = try directoryID(directory) else { continue }
                let songID = try Int64.fetchOne(
                    db,
                    sql: """
                        INSERT INTO song(directory_id, name, size, mtime, added, duration, format, failed)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                        ON CONFLICT(directory_id, name) DO UPDATE SET size = excluded.size, mtime = excluded.mtime,
                            duration = excluded.duration, format = excluded.format, failed = excluded.failed
                        RETURNING id
                        """, arguments: [directoryID, name, size, mtime, now, tags?.duration, tags?.audioFormat, tags == nil])
                guard let songID else { continue }
                try db.execute(sql: "DELETE FROM song_tag WHERE song_id = ?", arguments: [songID])
                let insert = try db.cachedStatement(sql: "INSERT INTO song_tag(song_id, seq, tag, value, folded) VALUES (?, ?, ?, ?, ?)")
                for (seq, entry) in (tags?.entries ?? []).enumerated() {
                    guard let code = StoredTag.code(entry.tag) else { continue }
                    try insert.execute(arguments: [songID, seq, code, entry.value, LibraryFolding.fold(entry.value)])
                }
            case .removeSong(let directory, let name):
                guard let directoryID = try directoryID(directory) else { continue }
                try db.execute(sql: "DELETE FROM song WHERE directory_id = ? AND name = ?", arguments: [directoryID, name])
            case .removeDirectory(let path):
                try db.execute(sql: "DELETE FROM directory WHERE path = ?", arguments: [path])
                directoryIDs[path] = nil
            }
        }
    }

    static func parentPath(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "" }
        return String(path[..<slash])
    }
}
