import Foundation
import Testing
import TonearmTestSupport

@testable import TonearmLibrary

/// The stored playlists' directory, on a real file system.
@Suite("Stored playlists keep their files")
struct PlaylistStoreTests {
    @Test func eachChangeIsTheFileAndFailuresNameTheirCause() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = PlaylistStore(directory: dir.path("playlists"))
        #expect(store.list().isEmpty, "no directory yet: no playlists")

        try store.create("mix", entries: ["a/one.flac", "http://127.0.0.1:9/s.mp3", "/abs/two.ogg"])
        #expect(
            try String(contentsOfFile: dir.path("playlists/mix.m3u"), encoding: .utf8)
                == "a/one.flac\nhttp://127.0.0.1:9/s.mp3\n/abs/two.ogg\n")
        #expect(throws: PlaylistStore.Failure.exists) { try store.create("mix", entries: []) }
        for bad in ["", "a/b", "line\nbreak", "cr\rx", String(repeating: "x", count: 252)] {
            #expect(throws: PlaylistStore.Failure.badName, "\(bad.debugDescription)") { try store.create(bad, entries: []) }
        }

        // The longest name a file name allows (255 bytes with ".m3u").
        let longest = String(repeating: "n", count: 251)
        try store.create(longest, entries: ["a.flac"])
        #expect(try store.entries(longest) == ["a.flac"])
        try store.remove(longest)

        try store.edit("mix") { entries in entries.swapAt(0, 2) }
        #expect(try store.entries("mix") == ["/abs/two.ogg", "http://127.0.0.1:9/s.mp3", "a/one.flac"])
        #expect(throws: PlaylistStore.Failure.noSuchPlaylist) { try store.edit("new") { $0.append("x") } }
        try store.edit("new", creating: true) { $0.append("x") }
        #expect(store.list().map(\.name) == ["mix", "new"])

        #expect(throws: PlaylistStore.Failure.exists) { try store.rename("mix", to: "new") }
        #expect(throws: PlaylistStore.Failure.noSuchPlaylist) { try store.rename("gone", to: "other") }
        try store.rename("mix", to: "tape")
        #expect(store.list().map(\.name) == ["new", "tape"])
        try store.remove("new")
        #expect(throws: PlaylistStore.Failure.noSuchPlaylist) { try store.remove("new") }

        // A failed change leaves the file as it was, and no temporary file behind.
        #expect(throws: PlaylistStore.Failure.tooLarge) {
            try store.edit("tape") { entries in entries += Array(repeating: "a.flac", count: PlaylistStore.maximumLength) }
        }
        #expect(try store.entries("tape").count == 3)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path("playlists")) == ["tape.m3u"])
    }

    /// Comments and blank lines of a hand-edited file are not entries.
    @Test func aHandEditedFileReadsAsItsEntries() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        try FileManager.default.createDirectory(atPath: dir.path("playlists"), withIntermediateDirectories: true)
        try "#EXTM3U\n\n#EXTINF:3,Title\na/one.flac\r\n  b/two.flac  \n".write(
            toFile: dir.path("playlists/hand.m3u"), atomically: true, encoding: .utf8)
        let store = PlaylistStore(directory: dir.path("playlists"))
        #expect(try store.entries("hand") == ["a/one.flac", "b/two.flac"])
    }
}
