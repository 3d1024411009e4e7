import NIOCore
import TonearmFrontEnd
import TonearmMedia
import TonearmPlayer

/// What a client may do, as MPD grades it (src/client/Permission.hxx, simplified to what
/// Tonearm's access levels distinguish).
enum MPDPermission: Int, Sendable, Comparable {
    /// Before the password: `password`, `ping`, `close`, `commands`, `notcommands`, `tagtypes`.
    case none
    /// Reading: status, the queue, the library (`control.read_gids`).
    case read
    /// Everything.
    case control

    static func < (a: MPDPermission, b: MPDPermission) -> Bool { a.rawValue < b.rawValue }
}

/// One command of the MPD front-end: who may run it, how many arguments it takes, and what it
/// does. Most answer at once on the connection's event loop; those that wait for the engine
/// (`play`, `seek`, `next`, …) or read the disk (`lsinfo`, …) run in a task and hand their
/// reply back, and so do listings of a long queue.
struct MPDCommand: Sendable {
    typealias Now = @Sendable (MPDCall, inout MPDResponse) throws(MPDError) -> Void
    /// The reply's lines (nil: none), written back on the event loop.
    typealias Later = @Sendable (MPDCall) async throws(MPDError) -> ByteBuffer?
    /// A reply too long to hold whole (`listallinfo` of a large library): made and sent in
    /// parts, each once the client has taken the one before.
    typealias Stream = @Sendable (MPDCall, MPDReplySink) async throws(MPDError) -> Void
    /// A command about the connection itself (its password, tags, binary limit, idle), run by
    /// the session on its event loop, saying how the connection goes on.
    typealias Connection = @Sendable (MPDSession, MPDRequest, inout MPDResponse) throws(MPDError) -> ConnectionOutcome

    enum ConnectionOutcome {
        /// Answered; the run goes on.
        case done
        /// The connection closes once the reply is out.
        case close
        /// The connection waits for news (`idle`): answered when something changes.
        case idle
    }

    enum Body: Sendable {
        case now(Now)
        case later(Later)
        /// A listing of the queue: encoded at once while the queue is short, on
        /// `LongReplies`' thread (and written back as `later`'s) when it is long.
        case listing(Now)
        case stream(Stream)
        case connection(Connection)

        /// When the body runs, for a queue of `queueLength` items.
        func timing(queueLength: Int, allocator: ByteBufferAllocator) -> Either {
            switch self {
            case .now(let body): return .now(body)
            case .later(let body): return .later(body)
            case .stream(let body): return .stream(body)
            case .connection(let body): return .connection(body)
            case .listing(let listing):
                guard LongReplies.isLong(queueLength) else { return .now(listing) }
                return .later { call throws(MPDError) in
                    try await call.environment.longReplies.encode { () throws(MPDError) in
                        var lines = MPDResponse(allocator: allocator)
                        try listing(call, &lines)
                        return lines.buffer
                    }
                }
            }
        }

        enum Either {
            case now(Now)
            case later(Later)
            case stream(Stream)
            case connection(Connection)
        }
    }

    /// Consecutive calls of one command in a command list, run as one: a client's "add all"
    /// sends thousands of `add`s, which become one trip to the library's thread and one queue
    /// edit (one journal record, one queue event) instead of one of each per song.
    struct Batch: Sendable {
        /// Whether this call may join a batch (`add` without a position).
        let joins: @Sendable (MPDRequest) -> Bool
        /// Runs the calls in order as one: the answers of those that succeeded, then the error
        /// that stopped the run at the next one, if any (what running them one by one gives).
        let run: @Sendable ([MPDCall]) async -> (answers: [ByteBuffer?], failure: MPDError?)
    }

    let name: String
    let permission: MPDPermission
    let arguments: ClosedRange<Int>
    let body: Body
    let batch: Batch?

    init(_ name: String, _ permission: MPDPermission, _ arguments: ClosedRange<Int>, _ body: Body, batch: Batch? = nil) {
        self.name = name
        self.permission = permission
        self.arguments = arguments
        self.body = body
        self.batch = batch
    }

    /// MPD's checks before a command runs (command_check_request), with its messages.
    func check(_ request: MPDRequest, permission: MPDPermission) -> MPDError? {
        guard permission >= self.permission else {
            return MPDError(.permission, "you don't have permission for \"\(name)\"")
        }
        let count = request.arguments.count
        if arguments.lowerBound == arguments.upperBound, count != arguments.lowerBound {
            return .argument("wrong number of arguments for \"\(name)\"")
        }
        if count < arguments.lowerBound { return .argument("too few arguments for \"\(name)\"") }
        if count > arguments.upperBound { return .argument("too many arguments for \"\(name)\"") }
        return nil
    }
}

/// The tags songs are shown with: MPD lets each client choose (`tagtypes enable|disable|clear|all`).
/// Tonearm reads every tag MPD knows (`MediaTag`), and lists them in MPD's order. `all` is what
/// MPD shows with its default `metadata_to_use`: every tag but `Comment`, which a client may
/// still enable for itself.
struct MPDTags: Sendable, Hashable {
    static let all = MPDTags(MediaTag.allCases.filter { $0 != .comment })
    static let none = MPDTags([])

    /// One bit per `MediaTag`, by its raw value: asked once per tag value written.
    private var mask: UInt64

    init(_ tags: [MediaTag]) { mask = tags.reduce(0) { $0 | Self.bit($1) } }

    func shows(_ tag: MediaTag) -> Bool { mask & Self.bit(tag) != 0 }
    mutating func show(_ tags: [MediaTag]) { mask |= MPDTags(tags).mask }
    mutating func hide(_ tags: [MediaTag]) { mask &= ~MPDTags(tags).mask }

    private static func bit(_ tag: MediaTag) -> UInt64 { 1 << UInt64(tag.rawValue) }
}

/// Where a streamed reply's parts go: `send` returns once the client has taken enough that the
/// next part may be made, false when the connection is gone (make no more).
struct MPDReplySink: Sendable {
    let send: @Sendable (ByteBuffer) async -> Bool
}

/// A command being run: its arguments and what it may use.
struct MPDCall: Sendable {
    let request: MPDRequest
    let environment: MPDEnvironment
    let permission: MPDPermission
    /// The tags this client asked for (`tagtypes`).
    var tags: MPDTags = .all
    /// Who asked: a file the client names is read only if it could read it itself.
    var peer = ClientPeer(credentials: nil, description: "")
    /// The most bytes of a file one reply carries (`binarylimit`).
    var binaryLimit = MPDCall.defaultBinaryLimit

    /// MPD's default `binarylimit`, and the bounds it takes.
    static let defaultBinaryLimit = 8192
    static let binaryLimits = 64...(8 << 20)

    var player: Player { environment.player }
    var arguments: [String] { request.arguments }
    var count: Int { request.arguments.count }

    subscript(_ index: Int) -> String { request.arguments[index] }

    // MARK: Arguments, parsed as MPD parses them (src/protocol/ArgParser.cxx), with its messages.

    func unsigned(_ index: Int, max: Int = Int(Int32.max)) throws(MPDError) -> Int {
        let text = self[index]
        guard let value = Int(text) else { throw .argument("Integer expected: \(text)") }
        // MPD reads it with strtoul: a negative number wraps round to a huge one.
        guard value >= 0, value <= max else { throw .argument("Number too large: \(text)") }
        return value
    }

    func integer(_ index: Int, in range: ClosedRange<Int> = Int(Int32.min)...Int(Int32.max)) throws(MPDError) -> Int {
        let text = self[index]
        guard let value = Int(text) else { throw .argument("Integer expected: \(text)") }
        guard range.contains(value) else { throw .argument("Number too large: \(text)") }
        return value
    }

    func bool(_ index: Int) throws(MPDError) -> Bool {
        switch self[index] {
        case "1": true
        case "0": false
        default: throw .argument("Boolean (0/1) expected: \(self[index])")
        }
    }

    /// Seconds; `signed` allows negative values (`seekcur`).
    func seconds(_ index: Int, signed: Bool = false) throws(MPDError) -> Double {
        let text = self[index]
        guard let value = Double(text), value.isFinite, abs(value) < 1e9 else { throw .argument("Float expected: \(text)") }
        guard signed || value >= 0 else { throw .argument("Negative value not allowed: \(text)") }
        return value
    }

    /// `N` (the one position N) or `START:END` (END exclusive; `START:` runs to the end; `-1`
    /// alone is everything, as in MPD).
    func range(_ index: Int) throws(MPDError) -> Range<Int> {
        let text = self[index]
        guard let colon = text.firstIndex(of: ":") else {
            if text == "-1" { return 0..<Int(Int32.max) }
            guard let value = Int(text) else { throw .argument("Integer or range expected: \(text)") }
            guard value >= 0 else { throw .argument("Number is negative: \(text)") }
            guard value < Int(Int32.max) else { throw .argument("Number too large: \(text)") }
            return value..<(value + 1)
        }
        let startText = text[..<colon]
        let endText = text[text.index(after: colon)...]
        guard let start = Int(startText) else { throw .argument("Integer or range expected: \(text)") }
        guard start >= 0 else { throw .argument("Number is negative: \(text)") }
        let end: Int
        if endText.isEmpty {
            end = Int(Int32.max)
        } else {
            guard let value = Int(endText) else { throw .argument("Integer or range expected: \(text)") }
            guard value >= 0 else { throw .argument("Number is negative: \(text)") }
            end = value
        }
        guard start <= Int(Int32.max), end <= Int(Int32.max) else { throw .argument("Number too large: \(text)") }
        guard start <= end else { throw .argument("Malformed range: \(text)") }
        return start..<end
    }

    /// A range clipped to a queue or list of `count` items: a start past the end is MPD's
    /// `Bad song index`, a start at the end an empty range.
    func clippedRange(_ index: Int, count: Int) throws(MPDError) -> Range<Int> {
        let range = try range(index)
        guard range.lowerBound <= count else { throw .argument("Bad song index") }
        return range.lowerBound..<min(range.upperBound, count)
    }
}
