import Foundation
import Testing

@testable import TonearmCore

private let dir = URL(fileURLWithPath: "/music/album", isDirectory: true)

private func file(_ path: String) -> URL { URL(fileURLWithPath: path, isDirectory: false) }

private func m3u(_ text: String) throws -> [PlaylistEntry] {
    try PlaylistFile.parse(text, kind: .m3u, directory: dir)
}

/// Garbage gives entries that could come from the text (a file or a URL with a scheme, no more
/// than it has lines), or a `PlaylistError` that says where or what; never anything else.
private func expectEntriesOrAClearError(_ text: String, _ parse: (String) throws -> [PlaylistEntry]) {
    do {
        let entries = try parse(text)
        #expect(entries.allSatisfy { $0.url.isFileURL || $0.url.scheme != nil }, "\(entries)")
        #expect(entries.count <= text.split(whereSeparator: \.isNewline).count, "\(entries)")
    } catch let error as PlaylistError {
        #expect(error.message.hasPrefix("line ") || error.message == "missing [playlist] header", "\(error)")
    } catch {
        Issue.record("not a PlaylistError: \(error)")
    }
}

private func pls(_ text: String) throws -> [PlaylistEntry] {
    try PlaylistFile.parse(text, kind: .pls, directory: dir)
}

@Suite("PlaylistFile: kind")
struct PlaylistKindTests {
    @Test(arguments: [
        ("a.m3u", PlaylistFile.Kind.m3u), ("/x/B.M3U8", .m3u), ("list.M3u", .m3u),
        ("radio.pls", .pls), ("/x/y/Radio.PLS", .pls),
    ])
    func known(path: String, kind: PlaylistFile.Kind) {
        #expect(PlaylistFile.kind(forPath: path) == kind)
    }

    @Test(arguments: ["a.flac", "m3u", "/x.m3u/song", "a.m3u.bak", "", ".", "a.", "/dir/pls"])
    func unknown(path: String) {
        #expect(PlaylistFile.kind(forPath: path) == nil)
    }
}

@Suite("PlaylistFile: M3U")
struct PlaylistM3UTests {
    @Test func plainPathsInOrder() throws {
        let entries = try m3u(
            """
            /abs/one.flac
            two.flac
            sub dir/a b.flac
            """)
        #expect(
            entries == [
                PlaylistEntry(url: file("/abs/one.flac")),
                PlaylistEntry(url: file("/music/album/two.flac")),
                PlaylistEntry(url: file("/music/album/sub dir/a b.flac")),
            ])
    }

    @Test func relativeParentIsResolved() throws {
        let entries = try m3u("../x.wav\n./y.wav\n../../../../z.wav")
        #expect(entries.map(\.url.path) == ["/music/x.wav", "/music/album/y.wav", "/z.wav"])
    }

    @Test func urlsAreKept() throws {
        let entries = try m3u(
            """
            http://radio.example/stream
            https://radio.example/a b.mp3?x=1
            sftp://host/music/c.ogg
            file:///music/other/a%20b.flac
            """)
        #expect(entries[0].url.absoluteString == "http://radio.example/stream")
        #expect(entries[1].url.scheme == "https")
        #expect(entries[1].url.host == "radio.example")
        #expect(entries[2].url.scheme == "sftp")
        #expect(entries[3].url.isFileURL)
        #expect(entries[3].url.path == "/music/other/a b.flac")
        #expect(entries[3].url == file("/music/other/a b.flac"))
    }

    /// Colons in file names are common ("Track 1: Intro"); only `scheme://` makes a URL.
    @Test func colonInAFileNameIsNotAScheme() throws {
        let entries = try m3u("Track 1: Intro.flac\nC:\\music\\a.mp3")
        #expect(entries[0].url == file("/music/album/Track 1: Intro.flac"))
        #expect(entries[1].url.isFileURL)
    }

    @Test func extinfTitlesTheNextEntryOnly() throws {
        let entries = try m3u(
            """
            #EXTM3U
            #EXTINF:123,Artist - Title, with commas, too
            a.flac
            b.flac
            #EXTINF:-1,Radio
            # a comment
            http://radio.example/live
            #extinf:5,lower case
            c.flac
            #EXTINF:7
            d.flac
            #EXTINF:8,
            e.flac
            #EXTINF:-1 tvg-name="A, B" group-title="x",Channel, One
            f.flac
            #EXTINF:9,dangling at the end
            """)
        #expect(
            entries.map(\.title) == [
                "Artist - Title, with commas, too", nil, "Radio", "lower case", nil, nil, "Channel, One",
            ])
        #expect(entries.map(\.url.lastPathComponent) == ["a.flac", "b.flac", "live", "c.flac", "d.flac", "e.flac", "f.flac"])
    }

    @Test func blankLinesCommentsCRLFAndBOM() throws {
        let text = "\u{FEFF}#EXTM3U\r\n\r\n#EXTINF:1,One\r\n  a.flac  \r\n\r\n# skip\r\nb.flac\r\n"
        let entries = try m3u(text)
        #expect(
            entries == [
                PlaylistEntry(url: file("/music/album/a.flac"), title: "One"),
                PlaylistEntry(url: file("/music/album/b.flac")),
            ])
    }

    @Test func bomBeforeAPlainEntryAndBareCR() throws {
        #expect(try m3u("\u{FEFF}a.flac\rb.flac").map(\.url.lastPathComponent) == ["a.flac", "b.flac"])
    }

    @Test func emptyAndCommentOnlyTextHaveNoEntries() throws {
        #expect(try m3u("").isEmpty)
        #expect(try m3u("\u{FEFF}").isEmpty)
        #expect(try m3u("#EXTM3U\n\n   \n#EXTINF:1,x\n").isEmpty)
    }

    @Test func anInvalidURLIsReportedWithItsLine() {
        #expect(throws: PlaylistError(message: "line 3: not a valid URL: http://[bad")) {
            try m3u("a.flac\n\nhttp://[bad\nb.flac")
        }
    }

    @Test(arguments: [
        "\u{0}\u{1}\u{7F}", "\u{FFFD}\u{FFFD}%%%", "#", "#EXTINF:", "#EXTINF:,", "://", "a://", "\r\r\n\n\r",
        String(repeating: "../", count: 200), "\"\"\"", "\u{FEFF}\u{FEFF}x",
    ])
    func garbageNeverCrashes(text: String) {
        expectEntriesOrAClearError(text) { try m3u($0) }
    }
}

@Suite("PlaylistFile: PLS")
struct PlaylistPLSTests {
    @Test func entriesOrderedByNumberWithTitles() throws {
        let entries = try pls(
            """
            [playlist]
            NumberOfEntries=4
            File3=c.flac
            Title3=Third
            file1=/abs/a.flac
            TITLE1=First, with comma
            Length1=100
            File10=http://radio.example/ten
            File2 = b.flac
            Title7=no file for this one
            Version=2
            """)
        #expect(
            entries == [
                PlaylistEntry(url: file("/abs/a.flac"), title: "First, with comma"),
                PlaylistEntry(url: file("/music/album/b.flac")),
                PlaylistEntry(url: file("/music/album/c.flac"), title: "Third"),
                PlaylistEntry(url: try #require(URL(string: "http://radio.example/ten"))),
            ])
    }

    @Test func headerIsCaseInsensitiveAndCommentsAreSkipped() throws {
        let entries = try pls("\u{FEFF}; made by hand\r\n[Playlist]\r\n# note\r\nFile1=../x.wav\r\nTitle1=\r\n")
        #expect(entries == [PlaylistEntry(url: file("/music/x.wav"))])
    }

    @Test func valuesMayContainEquals() throws {
        let entries = try pls("[playlist]\nFile1=http://r.example/s?a=1&b=2\nTitle1=a = b")
        #expect(entries[0].url.query == "a=1&b=2")
        #expect(entries[0].title == "a = b")
    }

    @Test func keysInOtherSectionsAreIgnored() throws {
        let entries = try pls("[playlist]\nFile1=a.flac\n[other]\nFile2=b.flac\n")
        #expect(entries.map(\.url.lastPathComponent) == ["a.flac"])
    }

    @Test func emptyPlaylistAndEmptyFileValues() throws {
        #expect(try pls("[playlist]\nNumberOfEntries=0\n").isEmpty)
        #expect(try pls("[playlist]\nFile1=\nFile2=b.flac").map(\.url.lastPathComponent) == ["b.flac"])
    }

    @Test func duplicateNumberLastWins() throws {
        #expect(try pls("[playlist]\nFile1=a.flac\nFile1=b.flac").map(\.url.lastPathComponent) == ["b.flac"])
    }

    @Test(arguments: [
        ("", "missing [playlist] header"),
        ("\n\n; only a comment\n", "missing [playlist] header"),
        ("File1=a.flac\n[playlist]", "line 1: expected [playlist] before any entry"),
        ("[playlist]\nFile1=a.flac\njust some text", "line 3: expected key=value: just some text"),
        ("[playlist\nFile1=a.flac", "line 1: malformed section header: [playlist"),
        ("[playlist]\r\nFile1=http://[bad", "line 2: not a valid URL: http://[bad"),
        ("#EXTM3U\n/music/a.flac", "line 2: expected [playlist] before any entry"),
    ])
    func errors(text: String, message: String) {
        #expect(throws: PlaylistError(message: message)) { try pls(text) }
    }

    @Test(arguments: [
        "\u{0}\u{1}\u{7F}", "[", "]", "[]", "[playlist]\n=", "[playlist]\nFile=x", "[playlist]\nFile-1=x",
        "[playlist]\nFile99999999999999999999999=x", "[playlist]\nFileⅣ=x", "\u{FEFF}[playlist]\n\u{FEFF}File1=x",
    ])
    func garbageNeverCrashes(text: String) {
        expectEntriesOrAClearError(text) { try pls($0) }
    }

    @Test func oddButAcceptedKeys() throws {
        // Keys that are not FileN/TitleN with N a decimal number are ignored, not guessed at.
        let entries = try pls("[playlist]\nFile=x\nFileⅣ=y\nFile-1=z\nFile99999999999999999999999=w\nFile2=b.flac")
        #expect(entries.map(\.url.lastPathComponent) == ["b.flac"])
    }
}
