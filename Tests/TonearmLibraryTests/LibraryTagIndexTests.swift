import Foundation
import Testing
import TonearmMedia
import TonearmTestSupport

@testable import TonearmLibrary

/// `list` and `count` answered from the tag index in memory equal SQL's answers, before and
/// after the tree changes under a scan.
@Suite("The tag index answers list and count as SQL does", .serialized, .timeLimit(.minutes(2)))
struct LibraryTagIndexTests {
    /// Fallbacks (album artist, sort tags), tags missing, an "é" written two ways (one byte
    /// sequence each, two values for MPD), and a file that is not media.
    static let songs: [MusicTree.Song] = [
        .init(
            "A/One/01.flac",
            ["artist": "Alpha", "albumartist": "Various", "album": "One", "title": "First", "genre": "Rock", "date": "1999"]),
        .init("A/One/02.flac", ["artist": "Béta", "albumartist": "Various", "album": "One", "title": "Second", "genre": "Jazz"]),
        .init("A/Two/01.mp3", from: "tone.mp3", ["artist": "Alpha", "album": "Two", "title": "Café", "artistsort": "Alpha, The"]),
        .init("B/Three/01.ogg", from: "tone.ogg", ["artist": "Be\u{301}ta", "album": "Three", "title": "CAFÉ", "genre": "Jazz"]),
        .init("B/Three/02.ogg", from: "tone.ogg", ["album": "Three", "title": "Alone"]),
        .init("loose.wav", from: "tone.wav"),
        .init("broken.mp3", from: "notmedia.mp3"),
    ]

    /// What is asked: tags with and without fallbacks, groups, filters that keep some songs.
    /// Made when asked, not kept in a global: LeakSanitizer cannot follow a global's indirect
    /// enum boxes (`LibraryFilter.everything` says why).
    static var lists: [(MediaTag, [MediaTag], LibraryFilter)] {
        [
            (.artist, [], .everything), (.albumArtist, [], .everything), (.album, [.albumArtist], .everything),
            (.album, [.artist], .everything), (.title, [.genre, .artist], .everything), (.artistSort, [], .everything),
            (.albumArtistSort, [.date], .everything), (.genre, [], .everything), (.title, [], .base("B")),
            (.album, [], .value(.tag(.artist), .equals, "Alpha", foldCase: false)),
            (.artist, [.album], .value(.tag(.title), .contains, "café", foldCase: true)),
            (.genre, [], .value(.tag(.title), .equals, "Nothing", foldCase: false)),
        ]
    }
    static var counts: [(MediaTag?, LibraryFilter)] {
        [
            (nil, .everything), (.genre, .everything), (.albumArtist, .everything), (.artist, .base("A")),
            (nil, .value(.tag(.genre), .equals, "Jazz", foldCase: false)), (.date, .everything),
        ]
    }

    static func expectIndexEqualsSQL(_ library: Library) throws {
        #expect(library.database.tagIndex.read { _ in true } == true, "the index is loaded")
        for (tag, groups, filter) in lists {
            let indexed = try library.search.distinctValues(tag, filter: filter, groups: groups)
            let inSQL = try library.search.distinctValuesInSQL(tag, filter: filter, groups: groups)
            #expect(indexed == inSQL, "list \(tag) group \(groups) \(filter)")
        }
        for (group, filter) in counts {
            let indexed = try library.search.totals(filter, groupedBy: group)
            let inSQL = try library.search.totalsInSQL(filter, groupedBy: group)
            #expect(
                indexed.map(\.group) == inSQL.map(\.group) && indexed.map(\.songs) == inSQL.map(\.songs),
                "count \(String(describing: group)) \(filter)")
            for (a, b) in zip(indexed, inSQL) { #expect(abs(a.playtime - b.playtime) < 1e-6) }
        }
        let indexed = try LibraryReader(database: library.database).stats()
        var inSQL = try LibraryReader(database: library.database).statsInSQL()
        #expect(abs(indexed.playtime - inSQL.playtime) < 1e-6)
        inSQL.playtime = indexed.playtime
        #expect(indexed == inSQL, "stats")
    }

    @Test func afterAFirstScanAndAfterEveryKindOfChange() async throws {
        let setup = try LibraryScanTests.Setup(songs: Self.songs)
        defer { setup.directory.remove() }
        _ = try await setup.scan()
        try Self.expectIndexEqualsSQL(setup.library)
        #expect(try setup.library.distinct(.artist, filter: .everything, groups: []).count == 4, "Béta twice, as bytes")

        // A song added, one removed, one that can no longer be read, a directory gone.
        try setup.tree.add(.init("C/Four/01.flac", ["artist": "Gamma", "album": "Four", "title": "New"]))
        try FileManager.default.removeItem(atPath: setup.tree.root + "/A/One/02.flac")
        try Data("not media".utf8).write(to: URL(fileURLWithPath: setup.tree.root + "/A/Two/01.mp3"))
        try FileManager.default.removeItem(atPath: setup.tree.root + "/B")
        _ = try await setup.scan()
        try Self.expectIndexEqualsSQL(setup.library)
        #expect(try setup.library.distinct(.artist, filter: .everything, groups: []) == [[""], ["Alpha"], ["Gamma"]])

        // A library opened on the database: the index is read from it.
        let reopened = try LibraryScanTests.Setup.open(setup.directory)
        _ = try await LibraryScanTests.Setup(reusing: setup, library: reopened).scan()
        try Self.expectIndexEqualsSQL(reopened)
        reopened.shutdown()
    }

    /// Songs set again and removed, past the point where the flat array of tags is rewritten:
    /// every song keeps its own tags, and a removed one is gone.
    @Test func tagsStayTheirSongsAcrossCompaction() {
        var state = LibraryTagIndex.State()
        state.loaded = true
        func entries(_ id: Int64, _ round: Int) -> [MediaTags.Entry] {
            [MediaTags.Entry(.artist, "A\(id % 7)"), MediaTags.Entry(.title, "T\(id)"), MediaTags.Entry(.genre, "G\(round)")]
        }
        for id in Int64(0)..<3000 { state.set(id, duration: Double(id), entries(id, 0)) }
        for round in 1...3 {
            for id in Int64(0)..<3000 where id % 3 != 0 { state.set(id, duration: Double(id), entries(id, round)) }
        }
        for id in Int64(0)..<3000 where id % 5 == 0 { state.remove(id) }
        #expect(state.tags.count < 3000 * 2 * 2, "rewritten once half of it was unused (\(state.tags.count))")
        for id in Int64(0)..<3000 {
            guard let slot = state.slots[id].map(Int.init) else {
                #expect(id % 5 == 0)
                continue
            }
            #expect(id % 5 != 0 && state.ids[slot] == id && state.durations[slot] == Double(id))
            let shown = state.tags(of: slot).map { "\($0.tag):\(state.values[Int($0.value)])" }
            // The title is not held; the genre is the last round's.
            #expect(shown == ["artist:A\(id % 7)", "genre:G\(id % 3 == 0 ? 0 : 3)"], "\(id): \(shown)")
        }
    }

    /// Every tag fits the 5 bits a held value gives it.
    @Test func everyTagFitsItsBits() {
        #expect(MediaTag.allCases.allSatisfy { $0.rawValue < 32 })
        for tag in MediaTag.allCases {
            let tagged = LibraryTagIndex.Tagged(tag: tag, value: LibraryTagIndex.Tagged.valueLimit - 1)
            #expect(tagged.tag == tag && tagged.value == LibraryTagIndex.Tagged.valueLimit - 1 && tagged.isTag(tag))
        }
    }
}
