import GRDB
import GRDBSQLite
import TonearmMedia

/// A directory of a pass over the library: a line of its own, before its songs.
package struct LibraryPassDirectory: Sendable, Equatable {
    package let uri: String
    package let modified: Int
}

/// One song of a pass, as the database holds it: its name, format and tag values are bytes in
/// the pass's storage, valid only while the song is being visited (no `String` is made of them).
package struct LibrarySongView {
    /// The song's directory ("" for the music directory itself).
    package let directory: String
    package let name: UnsafeRawBufferPointer
    package let modified: Int
    package let duration: Double?
    package let format: UnsafeRawBufferPointer?
    /// Its tags as `StoredTagList` keeps them.
    fileprivate let tagList: UnsafeRawBufferPointer

    /// Each of the song's tag values in the file's order.
    package func forEachTag(_ body: (MediaTag, UnsafeRawBufferPointer) throws -> Void) rethrows {
        try StoredTagList.forEach(in: tagList, body)
    }

    /// The song as a value of its own (for callers that keep it).
    package var song: LibrarySong {
        var tags: [MediaTags.Entry] = []
        tags.reserveCapacity(12)  // most songs have fewer: one allocation, not four growths
        forEachTag { tag, value in tags.append(MediaTags.Entry(tag, String(decoding: value, as: UTF8.self))) }
        let name = String(decoding: name, as: UTF8.self)
        return LibrarySong(
            uri: directory.isEmpty ? name : directory + "/" + name, modified: modified, duration: duration,
            format: format.map { String(decoding: $0, as: UTF8.self) }, tags: tags)
    }
}

/// The rows of one directory's songs, read into storage that is kept from one directory to the
/// next: a listing of the whole library allocates per directory at most, never per song or value.
struct LibraryPassBuffer {
    struct SongRow {
        var id: Int64
        var name: Range<Int>
        var modified: Int
        var duration: Double?
        var format: Range<Int>?
        /// `StoredTagList`'s bytes.
        var tags: Range<Int>
    }

    var bytes: [UInt8] = []
    /// In the order they were read: a directory's by id, ascending; a search's in its order.
    var songs: [SongRow] = []
    /// A directory's song ids in MPD's order (by name, byte by byte).
    var order: [Int64] = []
    var sortedIDs: [Int64] = []
    /// `songs`' indices in the order they are visited: a directory's by name (those of `order`
    /// that were found), a search's as it gave them.
    var visitOrder: [Int] = []

    mutating func removeAll() {
        bytes.removeAll(keepingCapacity: true)
        songs.removeAll(keepingCapacity: true)
        order.removeAll(keepingCapacity: true)
        sortedIDs.removeAll(keepingCapacity: true)
        visitOrder.removeAll(keepingCapacity: true)
    }

    /// Copies a text or blob column's bytes into storage; their range there.
    mutating func keep(_ statement: SQLiteStatement, column: Int32) -> Range<Int> {
        let start = bytes.count
        // The pointer first, then the size: SQLite's documented order (asking the size first
        // may convert the value, and the pointer then differs).
        let pointer =
            sqlite3_column_type(statement, column) == SQLITE_BLOB
            ? sqlite3_column_blob(statement, column) : UnsafeRawPointer(sqlite3_column_text(statement, column))
        let count = Int(sqlite3_column_bytes(statement, column))
        if count > 0, let pointer {
            bytes.append(contentsOf: UnsafeRawBufferPointer(start: pointer, count: count))
        }
        return start..<bytes.count
    }

    /// A directory's song by id (its songs are read by id, ascending).
    func index(of id: Int64) -> Int? {
        var low = 0
        var high = songs.count
        while low < high {
            let middle = (low + high) / 2
            if songs[middle].id < id { low = middle + 1 } else { high = middle }
        }
        return low < songs.count && songs[low].id == id ? low : nil
    }

    /// Appends the song of the row `statement` stands on: id, name (or URI), mtime, duration,
    /// format, tags (`StoredTagList`; the listing asks for them) or nothing.
    mutating func appendSong(_ statement: SQLiteStatement) {
        let duration = sqlite3_column_type(statement, 3) == SQLITE_NULL ? nil : sqlite3_column_double(statement, 3)
        let format = sqlite3_column_type(statement, 4) == SQLITE_NULL ? nil : keep(statement, column: 4)
        let name = keep(statement, column: 1)
        let tags = sqlite3_column_count(statement) > 5 ? keep(statement, column: 5) : bytes.count..<bytes.count
        songs.append(
            SongRow(
                id: sqlite3_column_int64(statement, 0), name: name, modified: Int(sqlite3_column_int64(statement, 2)),
                duration: duration, format: format, tags: tags))
    }
}

/// Listings of a whole subtree (`listall`, `listallinfo`, adding a directory) in one ordered pass:
/// the directories in MPD's order from one query, then per directory its song ids by name (the
/// unique index covers them) and its songs, each with its tags in one value (`StoredTagList`),
/// read as runs of ids. A scan gives a directory's songs neighbouring ids, so a run is mostly the
/// whole directory: one range read, where a read per song cost a search in two trees and nine
/// tag rows. Values are read in place through SQLite's C API (GRDB's rows would make a `String`
/// of each).
struct LibraryPassReader {
    let db: Database
    /// Ids further apart than this start a new run. The rows between are read and skipped:
    /// stepping over another directory's song costs about what a new search of the table costs.
    var runGap: Int64 = 2

    /// The directories under `uri` (with it first, when it is one) in MPD's walk order: each
    /// directory, then its subdirectories (sorted by path, byte by byte) each followed by what it
    /// holds. Nil when there is no such directory.
    func directories(under uri: String) throws -> [(id: Int64, directory: LibraryPassDirectory)]? {
        let rows =
            uri.isEmpty
            ? try Row.fetchAll(db, sql: "SELECT id, path, parent_id, mtime FROM directory")
            : try Row.fetchAll(
                db, sql: "SELECT id, path, parent_id, mtime FROM directory WHERE path = ? OR (path > ? AND path < ?)",
                arguments: [uri, uri + "/", uri + "0"])  // "0" follows "/": everything under uri
        guard let top = rows.first(where: { $0[1] as String == uri }) else { return uri.isEmpty ? [] : nil }
        var children: [Int64: [(id: Int64, directory: LibraryPassDirectory)]] = [:]
        for row in rows {
            guard let parent = row[2] as Int64? else { continue }
            children[parent, default: []].append((row[0], LibraryPassDirectory(uri: row[1], modified: row[3])))
        }
        var ordered: [(id: Int64, directory: LibraryPassDirectory)] = []
        ordered.reserveCapacity(rows.count)
        var stack = [(id: top[0] as Int64, directory: LibraryPassDirectory(uri: uri, modified: top[3]))]
        while let next = stack.popLast() {
            ordered.append(next)
            let sorted = (children[next.id] ?? []).sorted { $0.directory.uri.utf8.lexicographicallyPrecedes($1.directory.uri.utf8) }
            stack.append(contentsOf: sorted.reversed())
        }
        return ordered
    }

    /// Reads a directory's songs (or only the one named `only`) into `buffer`, with their tags
    /// when `withTags`; `buffer.visitOrder` then lists them in MPD's order.
    func read(directory id: Int64, only name: String? = nil, withTags: Bool, into buffer: inout LibraryPassBuffer) throws {
        buffer.removeAll()
        let ids =
            name == nil
            ? try db.cachedStatement(sql: "SELECT id FROM song WHERE directory_id = ? ORDER BY name")
            : try db.cachedStatement(sql: "SELECT id FROM song WHERE directory_id = ? AND name = ?")
        ids.setUncheckedArguments(name.map { [id, $0] } ?? [id])
        try step(ids) { buffer.order.append(sqlite3_column_int64($0, 0)) }
        guard !buffer.order.isEmpty else { return }
        buffer.sortedIDs.append(contentsOf: buffer.order)
        buffer.sortedIDs.sort()

        // `+`: read the run by id, not the directory by name through its index.
        let songs =
            withTags
            ? try db.cachedStatement(
                sql: """
                    SELECT id, name, mtime, duration, format, tags FROM song
                    WHERE id BETWEEN ? AND ? AND +directory_id = ? AND failed = 0 ORDER BY id
                    """)
            : try db.cachedStatement(
                sql: """
                    SELECT id, name, mtime, duration, format FROM song
                    WHERE id BETWEEN ? AND ? AND +directory_id = ? AND failed = 0 ORDER BY id
                    """)
        for run in runs(buffer.sortedIDs) {
            songs.setUncheckedArguments([run.lowerBound, run.upperBound, id])
            try step(songs) { buffer.appendSong($0) }
        }
        for id in buffer.order {
            if let index = buffer.index(of: id) { buffer.visitOrder.append(index) }  // not failed, not gone
        }
    }

    /// Reads the songs a query's statement gives (its columns as `appendSong` takes them), in
    /// its order.
    func read(_ statement: Statement, into buffer: inout LibraryPassBuffer) throws {
        buffer.removeAll()
        try step(statement) { buffer.appendSong($0) }
        buffer.visitOrder.append(contentsOf: buffer.songs.indices)
    }

    /// Ids in runs: each run's ids are at most `runGap` apart from the next.
    private func runs(_ sortedIDs: [Int64]) -> [ClosedRange<Int64>] {
        var runs: [ClosedRange<Int64>] = []
        var start = 0
        while start < sortedIDs.count {
            var end = start + 1
            while end < sortedIDs.count, sortedIDs[end] - sortedIDs[end - 1] <= runGap { end += 1 }
            runs.append(sortedIDs[start]...sortedIDs[end - 1])
            start = end
        }
        return runs
    }

    /// Steps `statement` to its end, handing each row to `row`.
    private func step(_ statement: Statement, _ row: (SQLiteStatement) throws -> Void) throws {
        let raw = statement.sqliteStatement
        while true {
            let code = sqlite3_step(raw)
            if code == SQLITE_DONE { return }
            guard code == SQLITE_ROW else {
                throw DatabaseError(resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(db.sqliteConnection)))
            }
            try row(raw)
        }
    }
}

extension LibraryPassBuffer {
    /// The song of the directory read that is called `name` (a binary search of the directory's
    /// songs, which are in byte order of their names); nil when it has none such.
    func song(named name: String, in directory: String) -> LibrarySong? {
        bytes.withUnsafeBytes { bytes -> LibrarySong? in
            var name = name
            return name.withUTF8 { wanted -> LibrarySong? in
                let rows = visitOrder
                var low = 0
                var high = rows.count
                while low < high {
                    let middle = (low + high) / 2
                    let candidate = UnsafeRawBufferPointer(rebasing: bytes[songs[rows[middle]].name])
                    if candidate.lexicographicallyPrecedes(UnsafeRawBufferPointer(wanted)) { low = middle + 1 } else { high = middle }
                }
                guard low < rows.count else { return nil }
                let row = songs[rows[low]]
                guard UnsafeRawBufferPointer(rebasing: bytes[row.name]).elementsEqual(UnsafeRawBufferPointer(wanted)) else { return nil }
                return view(row, directory: directory, bytes).song
            }
        }
    }

    private func view(_ row: SongRow, directory: String, _ bytes: UnsafeRawBufferPointer) -> LibrarySongView {
        LibrarySongView(
            directory: directory, name: UnsafeRawBufferPointer(rebasing: bytes[row.name]), modified: row.modified,
            duration: row.duration, format: row.format.map { UnsafeRawBufferPointer(rebasing: bytes[$0]) },
            tagList: UnsafeRawBufferPointer(rebasing: bytes[row.tags]))
    }

    /// Hands the directory's songs, in MPD's order, to `visit`.
    func visit(directory: String, _ visit: (LibrarySongView) throws -> Void) rethrows {
        try bytes.withUnsafeBytes { bytes in
            for index in visitOrder {
                try visit(view(songs[index], directory: directory, bytes))
            }
        }
    }
}
