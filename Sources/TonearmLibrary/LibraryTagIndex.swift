import Foundation
import GRDB
import TonearmMedia
import TonearmSync

/// Every listed song's grouping tags and length, in memory, for `list` and `count`: a first
/// ask groups these in one pass where SQL joined the tag table with itself (`list album group
/// albumartist` over 100,000 songs took 438 ms in SQL, MPD 48). Loaded once from the database
/// (`load`, on the scan thread before any scan), then changed on the writer thread after each
/// commit of a scan's changes (`apply`): it says what the last commit says.
///
/// Its memory counts in the daemon's RSS, so it holds only what is grouped: not the tags each
/// song has its own value of (title, track, name, comment, the track's MusicBrainz ids), which
/// `list` and `count` ask of SQL. Values are interned (a value many songs share is held once),
/// and the songs' tags lie in one flat array, not an array per song.
final class LibraryTagIndex: Sendable {
    /// A song's tag and value in 4 bytes: the tag's number in the top 5 bits, the value's
    /// index in `State.values` below.
    struct Tagged: Sendable {
        private let bits: UInt32
        static let valueLimit: Int32 = 1 << 27

        init(tag: MediaTag, value: Int32) { bits = UInt32(tag.rawValue) << 27 | UInt32(value) }

        var tag: MediaTag { MediaTag(rawValue: Int(bits >> 27))! }
        var value: Int32 { Int32(bits & (UInt32(1) << 27 - 1)) }
        func isTag(_ tag: MediaTag) -> Bool { bits >> 27 == UInt32(tag.rawValue) }
    }

    /// What a commit changed.
    enum Update: Sendable {
        /// Added or read again, with its tags (a song that cannot be read is `removed`: not listed).
        case song(Int64, duration: Double?, [MediaTags.Entry])
        case removed([Int64])
    }

    /// The tags the index holds.
    static func holds(_ tag: MediaTag) -> Bool {
        switch tag {
        case .title, .track, .name, .comment, .musicBrainzTrackID, .musicBrainzReleaseTrackID: false
        default: true
        }
    }

    struct State: Sendable {
        var loaded = false
        /// By slot: the song's id (-1: a free slot), its length (0 when unknown, as `count`
        /// sums it), and where its tags lie in `tags` (in the file's order).
        var ids: [Int64] = []
        var durations: [Double] = []
        var firstTag: [Int32] = []
        var tagCounts: [Int32] = []
        var tags: [Tagged] = []
        /// Slots by song id, the slots freed, and how many of `tags` no slot uses any more.
        var slots: [Int64: Int32] = [:]
        var freeSlots: [Int32] = []
        var unusedTags = 0
        var values: [String] = []
        var valueIDs: [ByteText: Int32] = [:]

        /// A song's tags, by slot.
        func tags(of slot: Int) -> ArraySlice<Tagged> {
            let first = Int(firstTag[slot])
            return tags[first..<first + Int(tagCounts[slot])]
        }

        mutating func intern(_ value: String) -> Int32 {
            if let id = valueIDs[ByteText(value)] { return id }
            let id = Int32(values.count)
            values.append(value)
            valueIDs[ByteText(value)] = id
            return id
        }

        mutating func set(_ id: Int64, duration: Double?, _ entries: [MediaTags.Entry]) {
            var held: [Tagged] = []
            for entry in entries where LibraryTagIndex.holds(entry.tag) {
                let value = intern(entry.value)
                // Past 134 million values (never, in a music library) it is no longer used:
                // SQL answers every question.
                guard value < Tagged.valueLimit else {
                    loaded = false
                    return
                }
                held.append(Tagged(tag: entry.tag, value: value))
            }
            let slot: Int
            if let known = slots[id] {
                slot = Int(known)
                unusedTags += Int(tagCounts[slot])
            } else if let free = freeSlots.popLast() {
                slot = Int(free)
            } else {
                slot = ids.count
                ids.append(0)
                durations.append(0)
                firstTag.append(0)
                tagCounts.append(0)
            }
            slots[id] = Int32(slot)
            ids[slot] = id
            durations[slot] = duration ?? 0
            firstTag[slot] = Int32(tags.count)
            tagCounts[slot] = Int32(held.count)
            tags.append(contentsOf: held)
            compactIfWasteful()
        }

        mutating func remove(_ id: Int64) {
            guard let slot = slots.removeValue(forKey: id).map(Int.init) else { return }
            unusedTags += Int(tagCounts[slot])
            ids[slot] = -1
            tagCounts[slot] = 0
            freeSlots.append(Int32(slot))
            compactIfWasteful()
        }

        /// Rewrites `tags` without what no slot uses once that is over half of it.
        private mutating func compactIfWasteful() {
            guard unusedTags > 4096, unusedTags * 2 > tags.count else { return }
            compact()
        }

        /// Rewrites the arrays at their size: appending leaves up to as much room again unused.
        mutating func trim() {
            compact()
            ids = ids.withUnsafeBufferPointer { Array($0) }
            durations = durations.withUnsafeBufferPointer { Array($0) }
            firstTag = firstTag.withUnsafeBufferPointer { Array($0) }
            tagCounts = tagCounts.withUnsafeBufferPointer { Array($0) }
            values = values.withUnsafeBufferPointer { Array($0) }
        }

        private mutating func compact() {
            var kept: [Tagged] = []
            kept.reserveCapacity(tags.count - unusedTags)
            for slot in ids.indices where ids[slot] >= 0 {
                let moved = tags(of: slot)
                firstTag[slot] = Int32(kept.count)
                kept.append(contentsOf: moved)
            }
            tags = kept
            unusedTags = 0
        }
    }

    private let state = Locked(State())

    /// Reads every listed song and its tags (one pass over the songs, their tag lists).
    func load(from database: LibraryDatabase) throws {
        var loaded = State()
        try database.read { db in
            let songs = try Row.fetchCursor(db, sql: "SELECT id, duration, tags FROM song WHERE failed = 0")
            var entries: [MediaTags.Entry] = []
            while let row = try songs.next() {
                entries.removeAll(keepingCapacity: true)
                if let list = row[2] as Data? {
                    list.withUnsafeBytes { bytes in
                        StoredTagList.forEach(in: bytes) { tag, value in
                            if Self.holds(tag) { entries.append(MediaTags.Entry(tag, String(decoding: value, as: UTF8.self))) }
                        }
                    }
                }
                loaded.set(row[0], duration: row[1], entries)
            }
        }
        loaded.loaded = true
        loaded.trim()
        state.withLock { $0 = loaded }
    }

    /// Brings the index in line with a commit (the writer thread, after it).
    func apply(_ updates: [Update]) {
        guard !updates.isEmpty else { return }
        state.withLock { state in
            guard state.loaded else { return }
            for update in updates {
                switch update {
                case .song(let id, let duration, let entries): state.set(id, duration: duration, entries)
                case .removed(let ids): for id in ids { state.remove(id) }
                }
            }
        }
    }

    /// Gives back the room its arrays grew into (after a scan).
    func trim() { state.withLock { $0.trim() } }

    /// `body` over the index as it stands; nil until it is loaded.
    func read<T>(_ body: (State) -> T) -> T? {
        state.withLock { state in state.loaded ? body(state) : nil }
    }
}
