import Foundation
import GRDB
import TonearmMedia

/// The database's tables, as migrations: a database made by an older build is brought up to date
/// when it is opened, never rebuilt from scratch.
enum LibrarySchema {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            // The music directory's tree; the root is the row whose path is "".
            try db.execute(
                sql: """
                    CREATE TABLE directory (
                        id INTEGER PRIMARY KEY,
                        path TEXT NOT NULL UNIQUE,
                        parent_id INTEGER REFERENCES directory(id) ON DELETE CASCADE,
                        mtime INTEGER NOT NULL
                    );
                    CREATE INDEX directory_by_parent ON directory(parent_id);
                    CREATE TABLE song (
                        id INTEGER PRIMARY KEY,
                        directory_id INTEGER NOT NULL REFERENCES directory(id) ON DELETE CASCADE,
                        name TEXT NOT NULL,
                        size INTEGER NOT NULL,
                        mtime INTEGER NOT NULL,
                        added INTEGER NOT NULL,
                        duration REAL,
                        format TEXT,
                        -- 1: the file could not be read as media; not reopened until it changes.
                        failed INTEGER NOT NULL DEFAULT 0,
                        UNIQUE (directory_id, name)
                    );
                    -- One row per tag value, seq giving the file's order (MPD prints tags so);
                    -- codes: StoredTag.
                    -- folded: the value with letters' case folded (LibraryFolding), for search.
                    CREATE TABLE song_tag (
                        song_id INTEGER NOT NULL REFERENCES song(id) ON DELETE CASCADE,
                        seq INTEGER NOT NULL,
                        tag INTEGER NOT NULL,
                        value TEXT NOT NULL,
                        folded TEXT NOT NULL,
                        PRIMARY KEY (song_id, seq)
                    ) WITHOUT ROWID;
                    CREATE INDEX song_tag_by_value ON song_tag(tag, value);
                    CREATE INDEX song_tag_by_folded ON song_tag(tag, folded);
                    CREATE TABLE library_state (
                        key TEXT PRIMARY KEY,
                        value
                    );
                    """)
        }
        migrator.registerMigration("v2 loudness") { db in
            // Measured loudness (EBU R128), by file identity: a file written again is another
            // identity and is measured anew. Any file, in the music directory or not (queue items
            // from elsewhere), by absolute path. integrated NULL: silent (nothing above the
            // gate); failed 1: could not be decoded.
            try db.execute(
                sql: """
                    CREATE TABLE loudness (
                        path TEXT PRIMARY KEY,
                        size INTEGER NOT NULL,
                        mtime INTEGER NOT NULL,
                        integrated REAL,
                        range REAL,
                        true_peak REAL,
                        failed INTEGER NOT NULL DEFAULT 0
                    ) WITHOUT ROWID;
                    """)
        }
        migrator.registerMigration("v3 mount points") { db in
            // 1: the directory was on another file system than its parent when last scanned (a
            // share or disk mounted there, or a link to one). Found empty or unreachable later,
            // it is offline: its songs are kept (LibraryScanner).
            try db.execute(sql: "ALTER TABLE directory ADD COLUMN mount INTEGER NOT NULL DEFAULT 0")
        }
        migrator.registerMigration("v4 tag lists") { db in
            // Each song's tags in one value (StoredTagList), for listings; filled from the tag
            // table for a database made before.
            try db.execute(sql: "ALTER TABLE song ADD COLUMN tags BLOB")
            let update = try db.makeStatement(sql: "UPDATE song SET tags = ? WHERE id = ?")
            let rows = try Row.fetchCursor(db, sql: "SELECT song_id, tag, value FROM song_tag ORDER BY song_id, seq")
            var current: Int64?
            var entries: [MediaTags.Entry] = []
            func finish() throws {
                if let current { try update.execute(arguments: [Data(StoredTagList.encode(entries)), current]) }
                entries.removeAll(keepingCapacity: true)
            }
            while let row = try rows.next() {
                let id: Int64 = row[0]
                if id != current {
                    try finish()
                    current = id
                }
                if let tag = StoredTag.tag(row[1]) { entries.append(MediaTags.Entry(tag, row[2])) }
            }
            try finish()
        }
        return migrator
    }
}
