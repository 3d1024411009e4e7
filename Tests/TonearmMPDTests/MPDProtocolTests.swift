import Foundation
import Logging
import NIOCore
import Testing
import TonearmEngine
import TonearmFrontEnd
import TonearmLibrary
import TonearmMedia
import TonearmPlayer
import TonearmTestSupport

@testable import TonearmMPD

/// MPD's line syntax and argument rules, as MPD 0.23 applies them (src/util/Tokenizer.cxx,
/// src/protocol/ArgParser.cxx); the expected messages are MPD's own.
@Suite("MPD request parsing", .timeLimit(.minutes(1)))
struct MPDProtocolTests {
    private func parse(_ line: String) -> Result<MPDRequest, MPDError> {
        Array(line.utf8).withUnsafeBytes { MPDRequest.parse($0) }
    }

    @Test(arguments: [
        ("status", "status", [String]()),
        ("add a.flac", "add", ["a.flac"]),
        ("add  \t a.flac  ", "add", ["a.flac"]),
        (#"add "with space.flac""#, "add", ["with space.flac"]),
        (#"add "quote \" and \\ back""#, "add", [#"quote " and \ back"#]),
        (#"add "\n""#, "add", ["n"]),
        (#"find "" x"#, "find", ["", "x"]),
        ("add dir/ünïcode.flac", "add", ["dir/ünïcode.flac"]),
        ("add back\\slash", "add", ["back\\slash"]),
        ("command_list_ok_begin", "command_list_ok_begin", []),
        ("status\r", "status", []),
    ])
    func splitsLikeMPD(line: String, name: String, arguments: [String]) throws {
        let request = try parse(line).get()
        #expect(request.name == name)
        #expect(request.arguments == arguments)
    }

    @Test(arguments: [
        (#"lsinfo "unterminated"#, MPDError.Code.unknown, #"Missing closing '"'"#, false),
        (#"lsinfo "a"b"#, .unknown, #"Space expected after closing '"'"#, false),
        ("lsinfo 'x'", .unknown, "Invalid unquoted character", false),
        ("foo-bar", .unknown, "Invalid word character", true),
        ("find " + Array(repeating: "x", count: 64).joined(separator: " "), .argument, "Too many arguments", false),
    ])
    func refusesWhatMPDRefuses(line: String, code: MPDError.Code, message: String, closes: Bool) {
        guard case .failure(let error) = parse(line) else {
            Issue.record("'\(line)' parsed")
            return
        }
        #expect(error.code == code)
        #expect(error.message == message)
        #expect(error.closesConnection == closes)
    }

    /// `duration` and `elapsed` are written without a format string; they read as `%.3f` does.
    @Test func secondsReadAsPrintfWritesThem() {
        for seconds in [0, 0.0004, 0.0016, 0.1, 1, 2.5, 59.9996, 183.123456, 3599.9994, 86_400.05, 1e7 + 0.25] {
            var response = MPDResponse()
            response.add("duration", seconds: seconds)
            #expect(String(buffer: response.buffer) == "duration: \(String(format: "%.3f", seconds))\n")
        }
    }

    /// `Last-Modified`, written digit by digit, says what strftime's ISO 8601 form says.
    @Test(arguments: [0, -1, 59, 951_782_400, 1_000_000_000, 2_147_483_647, 4_102_444_800, 253_402_300_799])
    func timestampsAreISO8601(seconds: Int) {
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        var text = [CChar](repeating: 0, count: 32)
        strftime(&text, text.count, "%Y-%m-%dT%H:%M:%SZ", &parts)
        #expect(MPDEnvironment.timestamp(seconds) == String(cString: text))
    }

    @Test(arguments: MediaTag.allCases)
    func aTagsLineStartsWithItsName(_ tag: MediaTag) {
        #expect(tag.linePrefix.description == tag.name + ": ")
    }

    /// A tag's value is one line, whatever the file holds.
    @Test func aLineBreakInATagIsASpace() {
        #expect(MediaTags.Entry(.comment, "two\nlines\r\nhere").value == "two lines here")
        var response = MPDResponse()
        response.add("Title", "a\nb")
        #expect(String(buffer: response.buffer) == "Title: a b\n")
    }

    /// A song's file line from the database's bytes: its directory, a slash unless it is the
    /// root, its name with any line break a space.
    @Test func aFileLineFromBytesIsOneLine() {
        for (directory, name, line) in [("", "a.flac", "file: a.flac\n"), ("Ab/Cé", "x\ny\rz.mp3", "file: Ab/Cé/x y z.mp3\n")] {
            var response = MPDResponse()
            Array(name.utf8).withUnsafeBytes { response.addFile(directory: directory, name: $0) }
            #expect(String(buffer: response.buffer) == line)
        }
    }

    /// Integers written digit by digit read as `String(Int)` writes them.
    @Test(arguments: [0, 7, 10, 99, 100, 12_345, -1, -120, Int.max, Int.min])
    func integersReadAsStringWritesThem(_ value: Int) {
        var response = MPDResponse()
        response.add("Time", value)
        #expect(String(buffer: response.buffer) == "Time: \(value)\n")
    }

    @Test func sixtyThreeArgumentsAreTheMostMPDTakes() throws {
        let request = try parse("find " + Array(repeating: "x", count: 63).joined(separator: " ")).get()
        #expect(request.arguments.count == 63)
    }

    @Test(arguments: ["", " status", "Status", "\u{1}\u{2}binary", "9lives"])
    func aLineThatIsNoCommandIsRecognisedBeforeParsing(line: String) {
        #expect(!Array(line.utf8).withUnsafeBytes(MPDRequest.startsLikeCommand))
    }

    @Test func quotingRoundTrips() throws {
        for text in ["plain", "with space", #"a "quoted" \ word"#, ""] {
            let request = try parse("add " + MPDRequest.quote(text)).get()
            #expect(request.arguments == [text])
        }
    }

    private func call(_ arguments: String...) -> MPDCall {
        MPDCall(request: MPDRequest(name: "x", arguments: arguments), environment: Self.environment, permission: .control)
    }

    private static let environment: MPDEnvironment = {
        let player = Player(engine: PlayerEngine(configuration: OutputConfiguration(device: "null")), logger: Logger(label: "test"))
        return MPDEnvironment(
            player: player, library: MPDLibrary(root: nil, sources: SourcePolicy()), longReplies: LongReplies(),
            password: nil, outputName: "null")
    }()

    @Test func rangesParseAsInMPD() throws {
        #expect(try call("5").range(0) == 5..<6)
        #expect(try call("2:4").range(0) == 2..<4)
        #expect(try call("3:").range(0) == 3..<Int(Int32.max))
        #expect(try call("-1").range(0) == 0..<Int(Int32.max))
        #expect(try call("2:2").range(0).isEmpty)
        for (text, message) in [
            ("x", "Integer or range expected: x"), (":5", "Integer or range expected: :5"),
            ("-2", "Number is negative: -2"), ("3:1", "Malformed range: 3:1"),
            ("1:x", "Integer or range expected: 1:x"),
        ] {
            #expect(throws: MPDError.argument(message)) { try call(text).range(0) }
        }
        #expect(try call("2:").clippedRange(0, count: 2).isEmpty)
        #expect(throws: MPDError.argument("Bad song index")) { try call("3").clippedRange(0, count: 2) }
    }

    @Test func numbersParseAsInMPD() throws {
        #expect(try call("7").unsigned(0) == 7)
        #expect(throws: MPDError.argument("Number too large: -1")) { try call("-1").unsigned(0, max: 100) }
        #expect(throws: MPDError.argument("Number too large: 101")) { try call("101").unsigned(0, max: 100) }
        #expect(throws: MPDError.argument("Integer expected: abc")) { try call("abc").integer(0) }
        #expect(throws: MPDError.argument("Number too large: 200")) { try call("200").integer(0, in: -100...100) }
        #expect(throws: MPDError.argument("Boolean (0/1) expected: 2")) { try call("2").bool(0) }
        #expect(throws: MPDError.argument("Negative value not allowed: -1")) { try call("-1").seconds(0) }
        #expect(try call("-1.5").seconds(0, signed: true) == -1.5)
        #expect(throws: MPDError.argument("Float expected: x")) { try call("x").seconds(0) }
    }

    @Test func subsystemsAreNamedInMPDsOrder() {
        let all: MPDSubsystems = [.mixer, .playlist, .player, .options, .update]
        #expect(all.names == ["playlist", "player", "mixer", "options", "update"])
        #expect(MPDSubsystems(name: "PLAYER") == .player)
        #expect(MPDSubsystems(name: "nonsense") == nil)
    }

    /// A song the database holds through a link out of `input.roots` (the scan follows
    /// links) is refused at `add`, `addid` and in a batch, as JSON-RPC's `add` refuses it.
    @Test func aSongThroughALinkOutOfTheRootsIsRefusedAtAdd() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let music = directory.path("music")
        _ = try MusicTree(at: music, [.init("a.flac", ["title": "A"])])
        _ = try MusicTree(at: directory.path("elsewhere"), [.init("x.flac", ["title": "X"])])
        try FileManager.default.createSymbolicLink(atPath: music + "/link", withDestinationPath: directory.path("elsewhere"))
        let database = try Library(
            configuration: LibraryConfiguration(musicDirectory: music),
            databasePath: directory.path("library.sqlite"), logger: Logger(label: "test")
        ) { MediaTags.read(path: $0) }
        defer { database.shutdown() }
        var news = database.subscribe().makeAsyncIterator()
        let job = try database.update()
        while let item = await news.next() {
            if case .updateFinished(job, _) = item { break }
        }
        #expect(try database.list("link/x.flac") != nil, "the scan went through the link")

        let library = MPDLibrary(root: music, sources: SourcePolicy(roots: MediaRoots([music])), database: database)
        #expect(try library.songsToAdd("a.flac").urls.count == 1)
        for uri in ["link/x.flac", "link"] {
            #expect(throws: MPDError.self, "\(uri)") { try library.songsToAdd(uri) }
        }
        let batch = library.songsToAdd(["a.flac", "link/x.flac", "a.flac"])
        #expect(batch.songs.count == 1 && batch.failure?.code == .permission, "\(batch.songs) \(String(describing: batch.failure))")
    }

    /// `update`'s refusals in MPD's words: a path outside the music directory, a full queue.
    @Test func updateRefusalsAreMPDs() {
        #expect(MPDCommands.updateRefusal(.queueFull) == MPDError(.updateAlready, "Update queue is full"))
        #expect(MPDCommands.updateRefusal(.badPath("why")) == .argument("Malformed path: why"))
    }

    @Test func argumentCountsAreCheckedWithMPDsMessages() {
        let ping = MPDCommands.table["ping"]!
        let add = MPDCommands.table["add"]!
        #expect(
            ping.check(MPDRequest(name: "ping", arguments: ["x"]), permission: .control)
                == .argument("wrong number of arguments for \"ping\""))
        #expect(add.check(MPDRequest(name: "add", arguments: []), permission: .control) == .argument("too few arguments for \"add\""))
        #expect(
            add.check(MPDRequest(name: "add", arguments: ["a", "b", "c"]), permission: .control)
                == .argument("too many arguments for \"add\""))
        #expect(
            add.check(MPDRequest(name: "add", arguments: ["a"]), permission: .read)
                == MPDError(.permission, "you don't have permission for \"add\""))
        #expect(
            MPDCommands.names(allowed: true, for: .none) == [
                "binarylimit", "close", "commands", "notcommands", "password", "ping", "tagtypes",
            ])
    }
}
