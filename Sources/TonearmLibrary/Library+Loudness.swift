import Foundation
import GRDB
import TonearmMedia

/// The library's database keeps what measuring files' loudness found (`loudness` table), for
/// its songs and for any other file the queue played, so nothing is measured twice.
extension Library: LoudnessStore {
    package func measurements(of files: [FileIdentity]) throws -> [FileIdentity: LoudnessMeasurement] {
        guard !files.isEmpty else { return [:] }
        return try database.read { db in
            var found: [FileIdentity: LoudnessMeasurement] = [:]
            let statement = try db.cachedStatement(
                sql: """
                    SELECT size, mtime, integrated, range, true_peak, failed FROM loudness WHERE path = ?
                    """)
            for file in files {
                guard let row = try Row.fetchOne(statement, arguments: [file.path]),
                    row["size"] as Int == file.size, row["mtime"] as Int == file.mtime
                else { continue }
                found[file] = Self.measurement(row)
            }
            return found
        }
    }

    package func store(_ measurements: [(FileIdentity, LoudnessMeasurement)]) throws {
        guard !measurements.isEmpty else { return }
        try database.write { db in
            let statement = try db.cachedStatement(
                sql: """
                    INSERT OR REPLACE INTO loudness (path, size, mtime, integrated, range, true_peak, failed)
                    VALUES (?, ?, ?, ?, ?, ?, ?)
                    """)
            for (file, measurement) in measurements {
                let loudness = measurement.loudness
                try statement.execute(arguments: [
                    file.path, file.size, file.mtime, loudness?.integrated, loudness?.range,
                    loudness?.truePeak.isFinite == true ? loudness?.truePeak : nil,
                    measurement == .unmeasurable,
                ])
            }
        }
    }

    package func unmeasured(after cursor: Int, limit: Int) throws -> (files: [FileIdentity], cursor: Int) {
        try database.read { db in
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT song.id, directory.path AS directory, song.name, song.size, song.mtime,
                           loudness.size AS measured_size, loudness.mtime AS measured_mtime
                    FROM song JOIN directory ON directory.id = song.directory_id
                    LEFT JOIN loudness ON loudness.path = ? || '/' || iif(directory.path = '', '', directory.path || '/') || song.name
                    WHERE song.id > ? AND song.failed = 0
                    ORDER BY song.id LIMIT ?
                    """, arguments: [root, cursor, limit])
            var files: [FileIdentity] = []
            for row in rows {
                let size: Int = row["size"]
                let mtime: Int = row["mtime"]
                if row["measured_size"] as Int? == size && row["measured_mtime"] as Int? == mtime { continue }
                let directory: String = row["directory"]
                let name: String = row["name"]
                let path = root + "/" + (directory.isEmpty ? name : directory + "/" + name)
                files.append(FileIdentity(path: path, size: size, mtime: mtime))
            }
            return (files, rows.last.map { $0["id"] as Int } ?? cursor)
        }
    }

    /// What was measured of these songs (by URI), where it still matches the song as scanned.
    package func loudness(of songs: [LibrarySong]) throws -> [String: LoudnessMeasurement] {
        guard !songs.isEmpty else { return [:] }
        return try database.read { db in
            let statement = try db.cachedStatement(
                sql: """
                    SELECT mtime, integrated, range, true_peak, failed FROM loudness WHERE path = ?
                    """)
            var found: [String: LoudnessMeasurement] = [:]
            for song in songs {
                guard let row = try Row.fetchOne(statement, arguments: [root + "/" + song.uri]),
                    row["mtime"] as Int == song.modified
                else { continue }
                found[song.uri] = Self.measurement(row)
            }
            return found
        }
    }

    private static func measurement(_ row: Row) -> LoudnessMeasurement {
        if row["failed"] as Bool { return .unmeasurable }
        guard let integrated = row["integrated"] as Double? else { return .silent }
        return .measured(Loudness(integrated: integrated, range: row["range"] ?? 0, truePeak: row["true_peak"] ?? -.infinity))
    }
}
