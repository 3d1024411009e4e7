import GRDB
import TonearmMedia

/// `list` and `count` made in SQL: the matching songs once (`m`), each song's effective values of
/// a tag (its own values, else those of the first fallback it has, else one "" — MPD's rule), and
/// the distinct rows or the totals grouped, sorted by SQLite's binary collation: byte by byte,
/// as MPD sorts them.
extension LibrarySearch {
    /// The matching songs as the CTE `m(id, duration)`.
    private static func matchingCTE(_ filter: LibraryFilter) -> Condition {
        let condition = condition(filter)
        return Condition(
            sql: """
                m(id, duration) AS MATERIALIZED (SELECT s.id, COALESCE(s.duration, 0) FROM song s
                    JOIN directory d ON d.id = s.directory_id WHERE s.failed = 0 AND \(condition.sql))
                """, arguments: condition.arguments)
    }

    /// The CTE `name(song_id, v)`: each matching song's effective values of `tag`.
    private static func valuesCTE(_ name: String, _ tag: MediaTag) -> Condition {
        let codes: [Int] = ([tag] + fallbacks(tag)).compactMap { StoredTag.code($0) }
        var parts: [String] = []
        var arguments: [(any DatabaseValueConvertible)?] = []
        // The songs that have any of `tags`: one set, made once (not a lookup per song).
        func lacks(_ tags: [Int], _ song: String) -> String {
            let marks = Array(repeating: "?", count: tags.count).joined(separator: ",")
            return "\(song) NOT IN (SELECT song_id FROM song_tag WHERE tag IN (\(marks)))"
        }
        for (index, code) in codes.enumerated() {
            let before = Array(codes[..<index])
            parts.append(
                "SELECT t.song_id, t.value FROM song_tag t WHERE t.tag = ? AND t.song_id IN (SELECT id FROM m)"
                    + (before.isEmpty ? "" : " AND " + lacks(before, "t.song_id")))
            arguments += [code] + before.map { $0 }
        }
        parts.append("SELECT m.id, '' FROM m WHERE " + lacks(codes, "m.id"))
        arguments += codes.map { $0 }
        return Condition(
            sql: "\(name)(song_id, v) AS MATERIALIZED (\(parts.joined(separator: " UNION ALL ")))",
            arguments: arguments)
    }

    /// The distinct rows of `groups`' values then `tag`'s among the songs `filter` means, sorted.
    func distinctValues(_ tag: MediaTag, filter: LibraryFilter, groups: [MediaTag]) throws -> [[String]] {
        if (groups + [tag]).allSatisfy(LibraryTagIndex.holds) {
            let matching = try matchingIDs(filter)
            if let rows = database.tagIndex.read({ LibraryIndexedAggregates(state: $0).distinct(groups + [tag], among: matching) }) ?? nil {
                return rows
            }
        }
        return try distinctValuesInSQL(tag, filter: filter, groups: groups)
    }

    /// How many songs `filter` means and their seconds, in all (`group` nil: one line) or by
    /// each value of `group` (a song counts once under each of its values).
    func totals(_ filter: LibraryFilter, groupedBy group: MediaTag?) throws -> [(group: String?, songs: Int, playtime: Double)] {
        if group.map(LibraryTagIndex.holds) ?? true {
            let matching = try matchingIDs(filter)
            if let totals = database.tagIndex.read({ LibraryIndexedAggregates(state: $0).totals(among: matching, groupedBy: group) }) ?? nil
            {
                return totals
            }
        }
        return try totalsInSQL(filter, groupedBy: group)
    }

    /// The ids of the listed songs `filter` means; nil: every one (no SQL asked).
    private func matchingIDs(_ filter: LibraryFilter) throws -> Set<Int64>? {
        if filter == .everything || filter == .base("") { return nil }
        let condition = Self.condition(filter)
        return try database.read { db in
            var ids = Set<Int64>()
            let rows = try Int64.fetchCursor(
                db,
                sql: """
                    SELECT s.id FROM song s JOIN directory d ON d.id = s.directory_id WHERE s.failed = 0 AND \(condition.sql)
                    """, arguments: Self.arguments(condition.arguments))
            while let id = try rows.next() { ids.insert(id) }
            return ids
        }
    }

    /// `distinctValues` in SQL: while the tag index is not loaded yet, and for the tests that
    /// hold the two equal.
    func distinctValuesInSQL(_ tag: MediaTag, filter: LibraryFilter, groups: [MediaTag]) throws -> [[String]] {
        let columns = groups + [tag]
        let ctes = [Self.matchingCTE(filter)] + columns.enumerated().map { Self.valuesCTE("e\($0.offset)", $0.element) }
        let names = columns.indices.map { "e\($0)" }
        let joins = names.dropFirst().map { " JOIN \($0) ON \($0).song_id = e0.song_id" }.joined()
        let sql =
            "WITH " + ctes.map(\.sql).joined(separator: ", ")
            + " SELECT DISTINCT " + names.map { "\($0).v" }.joined(separator: ", ") + " FROM e0" + joins
            + " ORDER BY " + columns.indices.map { "\($0 + 1)" }.joined(separator: ", ")
        return try database.read { db in
            try Row.fetchAll(db, sql: sql, arguments: Self.arguments(ctes.flatMap(\.arguments))).map { row in
                columns.indices.map { row[$0] }
            }
        }
    }

    /// `totals` in SQL (as `distinctValuesInSQL`).
    func totalsInSQL(_ filter: LibraryFilter, groupedBy group: MediaTag?) throws -> [(group: String?, songs: Int, playtime: Double)] {
        let matching = Self.matchingCTE(filter)
        return try database.read { db in
            guard let group else {
                let row = try Row.fetchOne(
                    db, sql: "WITH \(matching.sql) SELECT COUNT(*), TOTAL(duration) FROM m",
                    arguments: Self.arguments(matching.arguments))
                return [(nil, row?[0] ?? 0, row?[1] ?? 0)]
            }
            let values = Self.valuesCTE("e", group)
            return try Row.fetchAll(
                db,
                sql: """
                    WITH \(matching.sql), \(values.sql)
                    SELECT e.v, COUNT(*), TOTAL(m.duration) FROM (SELECT DISTINCT song_id, v FROM e) e JOIN m ON m.id = e.song_id
                    GROUP BY e.v ORDER BY e.v
                    """, arguments: Self.arguments(matching.arguments + values.arguments)
            ).map { ($0[0], $0[1], $0[2]) }
        }
    }

    static func arguments(_ values: [(any DatabaseValueConvertible)?]) -> StatementArguments {
        StatementArguments(values.map { $0?.databaseValue ?? .null })
    }
}
