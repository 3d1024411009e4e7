import Foundation
import GRDB
import Logging
import Testing
import TonearmEngine
import TonearmMedia
import TonearmSync
import TonearmTestSupport

@testable import TonearmLibrary

/// Scans of a real tree of tagged files, read by the engine's tag reader, into a real database.
@Suite("Library scans a music directory", .serialized, .timeLimit(.minutes(2)))
struct LibraryScanTests {
    static let songs: [MusicTree.Song] = [
        .init("Alpha/One/01 First.flac", ["artist": "Alpha", "album": "One", "title": "First", "track": "1"]),
        .init("Alpha/One/02 Second.flac", ["artist": "Alpha", "album": "One", "title": "Second", "track": "2"]),
        .init("Beta/Zwei/01 Café.mp3", from: "tone.mp3", ["artist": "Béta", "album": "Zwei", "title": "Café"]),
        .init("loose.ogg", from: "tone.ogg", ["title": "Loose", "genre": "Noise"]),
        .init("untagged.wav", from: "tone.wav"),
        .init("broken.mp3", from: "notmedia.mp3"),
    ]

    /// A tree, a database beside it, and a library on both.
    struct Setup {
        let directory: TemporaryDirectory
        let tree: MusicTree
        let library: Library

        init(songs: [MusicTree.Song] = LibraryScanTests.songs) throws {
            directory = try TemporaryDirectory()
            tree = try MusicTree(at: directory.path("music"), songs)
            library = try Self.open(directory)
        }

        /// Another library on the same tree and database.
        init(reusing other: Setup, library: Library) {
            directory = other.directory
            tree = other.tree
            self.library = library
        }

        static func open(_ directory: TemporaryDirectory) throws -> Library {
            try Library(
                configuration: LibraryConfiguration(musicDirectory: directory.path("music")),
                databasePath: directory.path("library.sqlite"), logger: Logger(label: "test")
            ) { MediaTags.read(path: $0) }
        }

        /// Runs a scan and waits for its news.
        func scan(_ path: String = "", rescan: Bool = false) async throws -> Library.LibraryNews {
            let news = library.subscribe()
            let job = try library.update(path, rescan: rescan)
            for await item in news {
                switch item {
                case .updateFinished(job, _), .offline(job, _): return item
                default: continue
                }
            }
            throw MusicTree.MusicTreeFailure(description: "no news of job \(job)")
        }
    }

    private func outcome(_ news: Library.LibraryNews) -> ScanOutcome? {
        if case .updateFinished(_, let outcome) = news { return outcome }
        return nil
    }

    @Test func aFirstScanKeepsEverySongWithItsTags() async throws {
        let setup = try Setup()
        defer { setup.directory.remove() }
        let first = try #require(outcome(try await setup.scan()))
        #expect(first.added == 5 && first.failed == 1 && first.removed == 0, "\(first)")
        let stats = try setup.library.stats()
        #expect(stats.songs == 5)
        #expect(stats.artists == 2 && stats.albums == 2, "\(stats)")
        #expect(stats.playtime > 4 && stats.updated > 0)

        // The root lists its songs, then its directories; the broken file is not a song.
        let root = try #require(try setup.library.list(""))
        let shown = root.map { entry -> String in
            switch entry {
            case .directory(let uri, _): "dir " + uri
            case .song(let song): "song " + song.uri
            }
        }
        #expect(shown == ["song loose.ogg", "song untagged.wav", "dir Alpha", "dir Beta"], "\(shown)")
        guard case .song(let cafe) = try #require(try setup.library.list("Beta/Zwei/01 Café.mp3")?.first) else {
            Issue.record("no song")
            return
        }
        #expect(cafe.tags.contains(MediaTags.Entry(.artist, "Béta")) && cafe.tags.contains(MediaTags.Entry(.title, "Café")))
        #expect(cafe.format?.hasPrefix("44100:") == true && (cafe.duration ?? 0) > 0.5)

        // The walk: a directory's songs, then each subdirectory and what it holds.
        var walked: [String] = []
        #expect(
            try setup.library.walk("", withTags: false) { entries in
                for entry in entries {
                    switch entry {
                    case .directory(let uri, _): walked.append("dir " + uri)
                    case .song(let song): walked.append(song.uri)
                    }
                }
            })
        #expect(
            walked == [
                "loose.ogg", "untagged.wav", "dir Alpha", "dir Alpha/One", "Alpha/One/01 First.flac",
                "Alpha/One/02 Second.flac", "dir Beta", "dir Beta/Zwei", "Beta/Zwei/01 Café.mp3",
            ], "\(walked)")
        #expect(try setup.library.list("nowhere") == nil)
    }

    /// `list` and `count` in SQL: fallbacks (AlbumArtist → Artist), "" for a song without the
    /// tag, groups, filters, byte order.
    @Test func distinctValuesAndTotalsFollowMPDsRules() async throws {
        let setup = try Setup()
        defer { setup.directory.remove() }
        _ = try await setup.scan()
        let library = setup.library
        #expect(try library.distinct(.artist, filter: .everything, groups: []) == [[""], ["Alpha"], ["Béta"]])
        #expect(try library.distinct(.albumArtist, filter: .everything, groups: []) == [[""], ["Alpha"], ["Béta"]])
        #expect(
            try library.distinct(.album, filter: .everything, groups: [.artist])
                == [["", ""], ["Alpha", "One"], ["Béta", "Zwei"]])
        #expect(
            try library.distinct(.title, filter: .value(.tag(.artist), .equals, "Alpha", foldCase: false), groups: [])
                == [["First"], ["Second"]])
        #expect(try library.distinct(.genre, filter: .value(.tag(.title), .equals, "Nothing", foldCase: false), groups: []).isEmpty)
        let byGenre = try library.count(.everything, groupedBy: .genre)
        #expect(byGenre.map(\.group) == ["", "Noise"] && byGenre.map(\.songs) == [4, 1], "\(byGenre)")
        let all = try #require(try library.count(.everything, groupedBy: nil).first)
        #expect(all.group == nil && all.songs == 5 && all.playtime > 4)
        let none = try #require(try library.count(.value(.tag(.title), .equals, "Nothing", foldCase: false), groupedBy: nil).first)
        #expect(none.songs == 0 && none.playtime == 0)
    }

    @Test func aRescanReadsOnlyWhatChanged() async throws {
        let setup = try Setup()
        defer { setup.directory.remove() }
        _ = try await setup.scan()
        let unchanged = try #require(outcome(try await setup.scan()))
        #expect(unchanged == ScanOutcome(seconds: unchanged.seconds), "nothing read again, the broken file included: \(unchanged)")

        // A changed file, a removed file, a removed directory, a new one.
        try setup.tree.add(.init("Alpha/One/02 Second.flac", ["artist": "Alpha", "album": "One", "title": "Second (edit)"]))
        try setup.library.touchForward(setup.tree.root + "/Alpha/One/02 Second.flac")
        try FileManager.default.removeItem(atPath: setup.tree.root + "/loose.ogg")
        try FileManager.default.removeItem(atPath: setup.tree.root + "/Beta")
        try setup.tree.add(.init("Gamma/new.flac", ["artist": "Gamma", "title": "New"]))
        let changed = try #require(outcome(try await setup.scan()))
        #expect(changed.added == 1 && changed.changed == 1 && changed.removed == 2, "\(changed)")
        let stats = try setup.library.stats()
        #expect(stats.songs == 4 && stats.artists == 2, "\(stats)")
        guard case .song(let edited) = try #require(try setup.library.list("Alpha/One/02 Second.flac")?.first) else {
            Issue.record("no song")
            return
        }
        #expect(edited.tags.contains(MediaTags.Entry(.title, "Second (edit)")))
        #expect(try setup.library.list("Beta") == nil)
    }

    /// A pass reads a directory's songs by runs of ids: songs added later (ids far from their
    /// neighbours', not in name order) are read once each, with their own tags, whatever the
    /// runs. Each directory's listing (`list`, read otherwise) is the oracle.
    @Test func aPassReadsEverySongOnceWhereverItsIdFalls() async throws {
        let setup = try Setup()
        defer { setup.directory.remove() }
        _ = try await setup.scan()
        try setup.tree.add(.init("Gamma/g.flac", ["artist": "Gamma", "title": "G"]))
        try setup.tree.add(.init("Alpha/One/00 Zero.flac", ["artist": "Alpha", "title": "Zero"]))
        try setup.tree.add(.init("Alpha/One/03 Third.flac", ["artist": "Alpha", "title": "Third", "genre": "X"]))
        _ = try await setup.scan()
        let library = setup.library
        let directories = ["", "Alpha", "Alpha/One", "Beta", "Beta/Zwei", "Gamma"]
        // The oracle, read another way: the song table and the tag table's rows, by name.
        var expected: [String: [LibrarySong]] = [:]
        try library.database.read { db in
            for directory in directories {
                let rows = try Row.fetchAll(
                    db,
                    sql: """
                        SELECT s.id, s.name, s.mtime, s.duration, s.format FROM song s JOIN directory d ON d.id = s.directory_id
                        WHERE d.path = ? AND s.failed = 0 ORDER BY s.name
                        """, arguments: [directory])
                expected[directory] = try rows.map { row in
                    let tags = try Row.fetchAll(
                        db, sql: "SELECT tag, value FROM song_tag WHERE song_id = ? ORDER BY seq", arguments: [row[0]]
                    )
                    .compactMap { tag in StoredTag.tag(tag[0]).map { MediaTags.Entry($0, tag[1]) } }
                    let name: String = row[1]
                    return LibrarySong(
                        uri: directory.isEmpty ? name : directory + "/" + name, modified: row[2], duration: row[3], format: row[4],
                        tags: tags)
                }
            }
        }
        #expect(expected["Alpha/One"]?.map(\.uri).last == "Alpha/One/03 Third.flac")
        for directory in directories {
            let listed = try #require(try library.list(directory, withTags: true)).compactMap {
                if case .song(let song) = $0 { song } else { nil }
            }
            #expect(listed == expected[directory], "list \(directory)")
        }
        for runGap in [0, 1, 32] as [Int64] {
            try library.database.read { db in
                let pass = LibraryPassReader(db: db, runGap: runGap)
                let order = try #require(try pass.directories(under: "")).map(\.directory.uri)
                #expect(order == directories, "\(order)")
                for (id, directory) in try #require(try pass.directories(under: "")) {
                    var buffer = LibraryPassBuffer()
                    try pass.read(directory: id, withTags: true, into: &buffer)
                    var read: [LibrarySong] = []
                    buffer.visit(directory: directory.uri) { read.append($0.song) }
                    #expect(read == expected[directory.uri], "run gap \(runGap), \(directory.uri)")
                }
                // A query's songs in its own order (not the ids'), each with its own tags.
                let statement = try db.makeStatement(
                    sql: """
                        SELECT s.id, \(LibrarySearch.uriSQL), s.mtime, s.duration, s.format, s.tags FROM song s
                        JOIN directory d ON d.id = s.directory_id WHERE s.failed = 0 ORDER BY s.name DESC
                        """)
                var buffer = LibraryPassBuffer()
                try pass.read(statement, into: &buffer)
                var read: [LibrarySong] = []
                buffer.visit(directory: "") { read.append($0.song) }
                let all = expected.values.joined().sorted { $0.uri.split(separator: "/").last! > $1.uri.split(separator: "/").last! }
                #expect(read == all, "run gap \(runGap): \(read.map(\.uri))")
            }
        }

        // A walk from a directory starts with its line; from a song, it is that song only.
        var walked: [String] = []
        #expect(
            try library.walk("Alpha", withTags: true) { entries in
                for entry in entries {
                    switch entry {
                    case .directory(let uri, _): walked.append("dir " + uri)
                    case .song(let song): walked.append(song.uri)
                    }
                }
            })
        #expect(walked == ["dir Alpha", "dir Alpha/One"] + (expected["Alpha/One"] ?? []).map(\.uri), "\(walked)")
        var alone: [LibraryEntry] = []
        #expect(try library.walk("Alpha/One/00 Zero.flac", withTags: true) { alone += $0 })
        #expect(alone == (expected["Alpha/One"]?.first).map { [.song($0)] }, "\(alone)")
        #expect(try library.walk("broken.mp3", withTags: true) { _ in } == false)
    }

    /// An unplugged disk: the music directory gone, or empty, keeps every entry.
    @Test func aMissingOrEmptyMusicDirectoryErasesNothing() async throws {
        let setup = try Setup()
        defer { setup.directory.remove() }
        _ = try await setup.scan()
        try FileManager.default.moveItem(atPath: setup.tree.root, toPath: setup.directory.path("away"))
        guard case .offline = try await setup.scan() else {
            Issue.record("not offline")
            return
        }
        #expect(try setup.library.stats().songs == 5)
        #expect(setup.library.offline != nil)
        try FileManager.default.createDirectory(atPath: setup.tree.root, withIntermediateDirectories: true)
        guard case .offline = try await setup.scan() else {
            Issue.record("not offline")
            return
        }
        #expect(try setup.library.stats().songs == 5)
        try FileManager.default.removeItem(atPath: setup.tree.root)
        try FileManager.default.moveItem(atPath: setup.directory.path("away"), toPath: setup.tree.root)
        let back = try #require(outcome(try await setup.scan()))
        #expect(back.added == 0 && back.removed == 0)
        #expect(setup.library.offline == nil)
    }

    /// A share below the music directory (here a link to another file system, /dev/shm), come
    /// up empty or gone, keeps its songs while the rest is scanned, and is named offline; its
    /// link removed, its songs go (MPD#1492).
    @Test func anOfflineMountPointBelowTheMusicDirectoryErasesNothing() async throws {
        let setup = try Setup()
        defer { setup.directory.remove() }
        let share = "/dev/shm/tonearm-share-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: share) }
        let far: [MusicTree.Song] = [.init("Gamma/01 Far.flac", ["title": "Far"]), .init("Gamma/02 Away.flac", ["title": "Away"])]
        _ = try MusicTree(at: share, far)
        var shareInfo = stat()
        var rootInfo = stat()
        try #require(
            stat(share, &shareInfo) == 0 && stat(setup.tree.root, &rootInfo) == 0 && shareInfo.st_dev != rootInfo.st_dev,
            "/dev/shm is not another file system here")
        try FileManager.default.createSymbolicLink(atPath: setup.tree.root + "/NAS", withDestinationPath: share)
        let first = try #require(outcome(try await setup.scan()))
        #expect(first.added == 7 && first.removed == 0, "\(first)")

        // Empty (not mounted): kept, named, and the rest is scanned.
        try FileManager.default.removeItem(atPath: share + "/Gamma")
        try setup.tree.add(.init("Alpha/One/03 Third.flac", ["artist": "Alpha", "title": "Third"]))
        let empty = try #require(outcome(try await setup.scan()))
        #expect(empty.added == 1 && empty.removed == 0, "\(empty)")
        #expect(try setup.library.stats().songs == 8)
        #expect(setup.library.offline?.contains(setup.tree.root + "/NAS") == true, "\(setup.library.offline ?? "nil")")
        // A link to nothing (the mount point itself gone): the same.
        try FileManager.default.removeItem(atPath: share)
        let dangling = try #require(outcome(try await setup.scan()))
        #expect(dangling.removed == 0, "\(dangling)")
        #expect(try setup.library.stats().songs == 8)
        #expect(setup.library.offline?.contains(setup.tree.root + "/NAS") == true)
        // Back: online again, nothing lost.
        _ = try MusicTree(at: share, far)
        let back = try #require(outcome(try await setup.scan()))
        #expect(back.removed == 0, "\(back)")
        #expect(setup.library.offline == nil)
        // The link removed: its songs go.
        try FileManager.default.removeItem(atPath: setup.tree.root + "/NAS")
        let unlinked = try #require(outcome(try await setup.scan()))
        #expect(unlinked.removed == 2, "\(unlinked)")
        #expect(try setup.library.stats().songs == 6)
    }

    /// A directory link back up the tree is followed once, not for ever.
    @Test func aLinkLoopEnds() async throws {
        let setup = try Setup(songs: [.init("a/song.flac", ["title": "A"])])
        defer { setup.directory.remove() }
        try FileManager.default.createSymbolicLink(atPath: setup.tree.root + "/a/up", withDestinationPath: "..")
        let first = try #require(outcome(try await setup.scan()))
        #expect(first.added == 1, "\(first)")
    }

    /// A database file that is not one is moved aside and a new one made.
    @Test func aDamagedDatabaseIsRebuilt() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        _ = try MusicTree(at: directory.path("music"), [.init("song.flac", ["title": "A"])])
        try Data(repeating: 0x5A, count: 8192).write(to: URL(fileURLWithPath: directory.path("library.sqlite")))
        let library = try Setup.open(directory)
        #expect(FileManager.default.fileExists(atPath: directory.path("library.sqlite.damaged")))
        #expect(try library.stats().songs == 0)
    }

    /// The scan thread runs at idle CPU priority (SCHED_IDLE) and in the idle I/O class, so
    /// playback and requests never wait for it.
    @Test func scansRunAtIdlePriority() async throws {
        let setup = try Setup(songs: [.init("song.flac", ["title": "A"])])
        defer { setup.directory.remove() }
        _ = try await setup.scan()
        let tasks = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")
        let scanThread = try #require(
            tasks.first { task in
                (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8))?
                    .trimmingCharacters(in: .whitespacesAndNewlines) == "tonearm-scan"
            })
        let stat = try String(contentsOfFile: "/proc/self/task/\(scanThread)/stat", encoding: .utf8)
        // After the command's closing parenthesis come fields 3, 4, …: the policy is field 41.
        let fields = stat[stat.range(of: ") ", options: .backwards)!.upperBound...].split(separator: " ")
        #expect(fields[38] == "5", "SCHED_IDLE is policy 5: \(fields[38])")
        let io = try runTool("/usr/bin/ionice", ["-p", scanThread], timeout: 10)
        #expect(io.output.trimmingCharacters(in: .whitespacesAndNewlines) == "idle", "\(io.output)")
    }

    /// A NUL byte ends the path for stat(2) and for SQLite: "\0" scanned the root as a
    /// directory whose every entry was the root itself, and removed every song. Refused, with
    /// every other path that is not inside the music directory, before a job is queued.
    @Test func aPathWithNULOrOutsideTheMusicDirectoryIsRefused() async throws {
        let setup = try Setup()
        defer { setup.directory.remove() }
        _ = try await setup.scan()
        for bad in ["\u{0}", "Alpha\u{0}", "Alpha/\u{0}/One", "/etc", "../music", "Alpha/../../music"] {
            await #expect(throws: LibraryUpdateRefusal.self, "\(bad.debugDescription)") { _ = try await setup.scan(bad) }
            #expect(try setup.library.stats().songs == 5, "\(bad.debugDescription) erased songs")
        }
        #expect(try Library.scanPath("/") == "" && Library.scanPath("./Alpha//One/") == "Alpha/One")
    }

    /// While a scan runs, a request a waiting scan covers (its path or one below it) joins it,
    /// and at most `updateQueueLimit` (32, MPD's) wait.
    @Test func waitingScansAreCoalescedAndCapped() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        _ = try MusicTree(at: directory.path("music"), [.init("song.flac", ["title": "A"])])
        // The first scan holds the scan thread in the tag reader until the gate opens.
        let gate = DispatchSemaphore(value: 0)
        let library = try Library(
            configuration: LibraryConfiguration(musicDirectory: directory.path("music")),
            databasePath: directory.path("library.sqlite"), logger: Logger(label: "test")
        ) { path in
            gate.wait()
            gate.signal()
            return MediaTags.read(path: path)
        }
        var news = library.subscribe().makeAsyncIterator()
        let running = try library.update()
        while let item = await news.next(), item != .updateStarted(job: running) {}

        var jobs: [Int] = []
        for n in 0..<Library.updateQueueLimit { jobs.append(try library.update("d\(n)")) }
        #expect(Set(jobs).count == Library.updateQueueLimit && !jobs.contains(running), "\(jobs)")
        #expect(try library.update("d5") == jobs[5] && library.update("d5//") == jobs[5] && library.update("d5/sub") == jobs[5])
        #expect(throws: LibraryUpdateRefusal.queueFull) { try library.update("d32") }
        #expect(throws: LibraryUpdateRefusal.queueFull) { try library.update("d5", rescan: true) }
        #expect(throws: LibraryUpdateRefusal.queueFull) { try library.update() }

        gate.signal()
        let last = jobs[jobs.count - 1]
        while let item = await news.next() {
            if case .updateFinished(last, _) = item { break }
        }
        #expect(try library.update("d32") > last, "the queue drained, a new scan is taken")
        library.shutdown()
    }

    /// A file name in another encoding than UTF-8 cannot be named by any client: skipped, and
    /// the log says which (it was skipped without a word).
    @Test func aNameThatIsNotUTF8IsSkippedAndSaidSo() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        _ = try MusicTree(at: directory.path("music"), [.init("good.wav", from: "tone.wav")])
        var name = Array((directory.path("music") + "/bad").utf8)
        name += [0xE9] + Array(".wav".utf8) + [0]  // "badé.wav" in Latin-1
        let fd = name.withUnsafeBufferPointer {
            $0.baseAddress!.withMemoryRebound(to: CChar.self, capacity: name.count) { open($0, O_CREAT | O_WRONLY, 0o644) }
        }
        try #require(fd >= 0)
        close(fd)
        let lines = Locked<[String]>([])
        let library = try Library(
            configuration: LibraryConfiguration(musicDirectory: directory.path("music")),
            databasePath: directory.path("library.sqlite"),
            logger: Logger(label: "test") { _ in CollectingLogHandler(lines: lines) }
        ) { MediaTags.read(path: $0) }
        defer { library.shutdown() }
        var news = library.subscribe().makeAsyncIterator()
        let job = try library.update()
        while let item = await news.next() {
            if case .updateFinished(job, _) = item { break }
        }
        #expect(try library.stats().songs == 1)
        #expect(lines.withLock { $0 }.contains { $0.contains("not UTF-8") && $0.contains("bad\\xE9.wav") }, "\(lines.withLock { $0 })")
    }

    /// Before the first scan has written anything, the music directory is there and empty (MPD
    /// answers root `lsinfo` with OK then); another path is not.
    @Test func theRootIsListedBeforeTheFirstScan() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        _ = try MusicTree(at: directory.path("music"), [.init("good.wav", from: "tone.wav")])
        let library = try Setup.open(directory)
        defer { library.shutdown() }
        #expect(try library.list("", withTags: false) == [])
        #expect(try library.list("Alpha", withTags: false) == nil)
        #expect(try library.startWalk("", withTags: false) != nil)
    }

    /// A database made before songs kept their tags in one value is brought up to date when it
    /// is opened: its listings show every tag, as the tag table holds them.
    @Test func aDatabaseWithoutTagListsGetsThem() async throws {
        let setup = try Setup()
        defer { setup.directory.remove() }
        _ = try await setup.scan()
        func walked(_ library: Library) throws -> [LibraryEntry] {
            var entries: [LibraryEntry] = []
            _ = try library.walk("", withTags: true) { entries += $0 }
            return entries
        }
        let before = try walked(setup.library)
        #expect(before.contains { if case .song(let song) = $0 { song.tags.count >= 4 } else { false } })
        setup.library.shutdown()
        let queue = try DatabaseQueue(path: setup.directory.path("library.sqlite"))
        try await queue.write { db in
            try db.execute(sql: "ALTER TABLE song DROP COLUMN tags")
            try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier = 'v4 tag lists'")
        }
        try queue.close()
        let reopened = try Setup.open(setup.directory)
        defer { reopened.shutdown() }
        #expect(try walked(reopened) == before)
    }

    /// A song's tag list: long values (a length in two bytes and more), every tag, in order; a
    /// code this build does not know is skipped; a value cut short ends the list.
    @Test func tagListsRoundTrip() {
        let entries = [
            MediaTags.Entry(.artist, "Béta"), MediaTags.Entry(.title, String(repeating: "x", count: 200)),
            MediaTags.Entry(.comment, String(repeating: "é", count: 9000)), MediaTags.Entry(.genre, ""),
        ]
        var bytes = StoredTagList.encode(entries)
        func decoded(_ bytes: [UInt8]) -> [MediaTags.Entry] {
            var found: [MediaTags.Entry] = []
            bytes.withUnsafeBytes { list in
                StoredTagList.forEach(in: list) { found.append(MediaTags.Entry($0, String(decoding: $1, as: UTF8.self))) }
            }
            return found
        }
        #expect(decoded(bytes) == entries)
        bytes = [200, 1, UInt8(ascii: "?")] + bytes  // code 200: no tag
        #expect(decoded(bytes) == entries)
        #expect(decoded(Array(bytes.dropLast())) == Array(entries.dropLast()), "the last length cut off")
        #expect(decoded(Array(bytes.dropLast(3))) == Array(entries.dropLast(2)), "the comment cut short")
    }

    /// Every tag the daemon knows has a code in the database.
    @Test func everyTagHasAStoredCode() {
        #expect(StoredTag.unstored.isEmpty, "\(StoredTag.unstored)")
    }
}

extension Library {
    /// Moves a file's modification time a few seconds on, as an edit a second later would.
    func touchForward(_ path: String) throws {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        let modified = (attributes[.modificationDate] as? Date) ?? Date()
        try FileManager.default.setAttributes([.modificationDate: modified.addingTimeInterval(5)], ofItemAtPath: path)
    }
}

/// Keeps what is logged, to look at.
struct CollectingLogHandler: LogHandler {
    let lines: Locked<[String]>
    var logLevel: Logger.Level = .trace
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(
        level: Logger.Level, message: Logger.Message, metadata: Logger.Metadata?, source: String, file: String, function: String,
        line: UInt
    ) {
        let fields = (metadata ?? [:]).sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        lines.withLock { $0.append("\(message) \(fields)") }
    }
}
