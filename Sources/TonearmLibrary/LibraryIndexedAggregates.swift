import Glibc
import TonearmMedia

/// `list` and `count` over the tag index in memory, with the meaning `LibraryAggregates` gives
/// them in SQL: a song's effective values of a tag are its own, else those of the first fallback
/// it has, else one "" (MPD's rule); rows and groups are sorted byte by byte, as MPD (and
/// SQLite's binary collation) sort them. One pass over the songs, allocating nothing per song
/// (a row of one or two values is a number, not an array).
struct LibraryIndexedAggregates {
    let state: LibraryTagIndex.State

    /// "" where a song has neither the tag nor a fallback.
    private static let none: Int32 = -1

    /// What `stats` counts of the listed songs: how many, how long in all, and how many distinct
    /// artists and albums (values the songs have, as SQL's `COUNT(DISTINCT value)` counts them).
    func stats() -> (songs: Int, playtime: Double, artists: Int, albums: Int) {
        var artists = [Bool](repeating: false, count: state.values.count)
        var albums = [Bool](repeating: false, count: state.values.count)
        var (songs, playtime, artistCount, albumCount) = (0, 0.0, 0, 0)
        for slot in state.ids.indices where state.ids[slot] >= 0 {
            songs += 1
            playtime += state.durations[slot]
            for tagged in state.tags(of: slot) {
                let value = Int(tagged.value)
                if tagged.isTag(.artist), !artists[value] {
                    artists[value] = true
                    artistCount += 1
                } else if tagged.isTag(.album), !albums[value] {
                    albums[value] = true
                    albumCount += 1
                }
            }
        }
        return (songs, playtime, artistCount, albumCount)
    }

    /// The distinct rows of `columns`' effective values among `matching` (nil: every song);
    /// nil when the index does not hold one of the columns (SQL answers then).
    func distinct(_ columns: [MediaTag], among matching: Set<Int64>?) -> [[String]]? {
        guard columns.allSatisfy(LibraryTagIndex.holds) else { return nil }
        let chains = columns.map { [$0] + LibrarySearch.fallbacks($0) }
        var values = [[Int32]](repeating: [], count: columns.count)
        for index in values.indices { values[index].reserveCapacity(8) }
        var one = Set<Int32>()
        var two = Set<UInt64>()
        var more = Set<[Int32]>()
        for slot in state.ids.indices where isMatching(slot, matching) {
            for index in chains.indices { effective(slot, chains[index], into: &values[index]) }
            switch columns.count {
            case 1:
                for value in values[0] { one.insert(value) }
            case 2:
                for first in values[0] {
                    for second in values[1] { two.insert(UInt64(UInt32(bitPattern: first)) << 32 | UInt64(UInt32(bitPattern: second))) }
                }
            default:
                // Every combination, as SQL's join of the columns on the song gives.
                var row = [Int32](repeating: 0, count: columns.count)
                func combine(_ column: Int) {
                    guard column < columns.count else {
                        _ = more.insert(row)
                        return
                    }
                    for value in values[column] {
                        row[column] = value
                        combine(column + 1)
                    }
                }
                combine(0)
            }
        }
        // Rows of value numbers, sorted by each value's place in byte order (the values sorted
        // once, not compared again for every pair of rows).
        let rows: [[Int32]]
        switch columns.count {
        case 1: rows = one.map { [$0] }
        case 2:
            rows = two.map { [Int32(bitPattern: UInt32(truncatingIfNeeded: $0 >> 32)), Int32(bitPattern: UInt32(truncatingIfNeeded: $0))] }
        default: rows = Array(more)
        }
        let rank = ranks(Set(rows.joined()))
        return rows.sorted { a, b in
            for (x, y) in zip(a, b) where x != y { return rank[x]! < rank[y]! }
            return false
        }.map { $0.map(text) }
    }

    /// How many of `matching` songs (nil: every one) and their seconds, in all or by each
    /// effective value of `group` (a song counts once under each of its values); nil when the
    /// index does not hold `group`.
    func totals(among matching: Set<Int64>?, groupedBy group: MediaTag?) -> [(group: String?, songs: Int, playtime: Double)]? {
        guard let group else {
            var songs = 0
            var playtime = 0.0
            for slot in state.ids.indices where isMatching(slot, matching) {
                songs += 1
                playtime += state.durations[slot]
            }
            return [(nil, songs, playtime)]
        }
        guard LibraryTagIndex.holds(group) else { return nil }
        let chain = [group] + LibrarySearch.fallbacks(group)
        var totals: [Int32: (songs: Int, playtime: Double)] = [:]
        var values: [Int32] = []
        values.reserveCapacity(8)
        for slot in state.ids.indices where isMatching(slot, matching) {
            effective(slot, chain, into: &values)
            for (index, value) in values.enumerated() where !values[..<index].contains(value) {
                totals[value, default: (0, 0)].songs += 1
                totals[value, default: (0, 0)].playtime += state.durations[slot]
            }
        }
        let rank = ranks(Set(totals.keys))
        return totals.sorted { rank[$0.key]! < rank[$1.key]! }.map { (text($0.key), $0.value.songs, $0.value.playtime) }
    }

    /// The song's values of the first tag of `chain` it has, or `none` if it has none of them,
    /// into `values` (whose storage is reused song after song).
    private func effective(_ slot: Int, _ chain: [MediaTag], into values: inout [Int32]) {
        values.removeAll(keepingCapacity: true)
        let tags = state.tags(of: slot)
        for tag in chain {
            for tagged in tags where tagged.isTag(tag) { values.append(tagged.value) }
            if !values.isEmpty { return }
        }
        values.append(Self.none)
    }

    /// A slot in use whose song `matching` holds (nil: every song).
    private func isMatching(_ slot: Int, _ matching: Set<Int64>?) -> Bool {
        let id = state.ids[slot]
        return id >= 0 && (matching?.contains(id) ?? true)
    }

    private func text(_ value: Int32) -> String { value == Self.none ? "" : state.values[Int(value)] }

    /// Each value's place among `values` in byte order (UTF-8, a prefix first), as MPD and
    /// SQLite's binary collation sort; "" first.
    private func ranks(_ values: Set<Int32>) -> [Int32: Int] {
        let sorted = values.sorted { Self.bytesPrecede(text($0), text($1)) }
        return Dictionary(uniqueKeysWithValues: sorted.enumerated().map { ($0.element, $0.offset) })
    }

    private static func bytesPrecede(_ a: String, _ b: String) -> Bool {
        var a = a
        var b = b
        return a.withUTF8 { x in
            b.withUTF8 { y in
                let common = min(x.count, y.count)
                let order = common == 0 ? 0 : memcmp(x.baseAddress!, y.baseAddress!, common)
                return order != 0 ? order < 0 : x.count < y.count
            }
        }
    }
}
