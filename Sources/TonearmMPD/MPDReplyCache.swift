import NIOCore
import TonearmSync

/// Whole replies to the library's read-only queries (`find`, `search`, `list`, `count`,
/// `searchcount`), kept for the next identical request until the database changes. MPD clients
/// ask the same few questions again and again (M.A.L.P. and myMPD send `list album group
/// albumartist` for each view), and a kept reply costs a copy instead of a query: the database
/// is read once per question per change. Keyed by the command, its arguments and the tags the
/// client is shown; emptied when a scan changed anything (before `idle database` is sent), and
/// bounded in bytes (the oldest replies go first).
final class MPDReplyCache: Sendable {
    static let maximumBytes = 32 << 20
    /// A larger reply is not kept: past MPD's own output buffer (8 MiB), where MPD drops the
    /// client instead of answering.
    static let maximumReplyBytes = 8 << 20

    private struct Key: Hashable {
        let command: String
        let arguments: [String]
        let tags: MPDTags
    }

    private struct State {
        var generation = 0
        var replies: [Key: ByteBuffer] = [:]
        var order: [Key] = []
        var bytes = 0
    }

    private let state = Locked(State())

    /// Changes with each database change: a reply made before one is not kept.
    var generation: Int { state.withLock { $0.generation } }

    func reply(for call: MPDCall) -> ByteBuffer? {
        let key = Key(command: call.request.name, arguments: call.request.arguments, tags: call.tags)
        return state.withLock { $0.replies[key] }
    }

    /// Keeps `reply`, made from the database as it was at `generation`.
    func keep(_ reply: ByteBuffer, for call: MPDCall, madeAt generation: Int) {
        guard reply.readableBytes <= Self.maximumReplyBytes else { return }
        let key = Key(command: call.request.name, arguments: call.request.arguments, tags: call.tags)
        state.withLock { state in
            guard state.generation == generation, state.replies[key] == nil else { return }
            state.replies[key] = reply
            state.order.append(key)
            state.bytes += reply.readableBytes
            while state.bytes > Self.maximumBytes, !state.order.isEmpty {
                let oldest = state.order.removeFirst()
                state.bytes -= state.replies.removeValue(forKey: oldest)?.readableBytes ?? 0
            }
        }
    }

    /// The database changed: no kept reply holds.
    func databaseChanged() {
        state.withLock { state in
            state.generation += 1
            state.replies.removeAll()
            state.order.removeAll()
            state.bytes = 0
        }
    }

    /// The reply `make` gives, kept for the next identical call.
    static func cached(_ call: MPDCall, _ make: (MPDCall) async throws(MPDError) -> ByteBuffer?) async throws(MPDError) -> ByteBuffer? {
        let cache = call.environment.replies
        if let kept = cache.reply(for: call) { return kept }
        let generation = cache.generation
        let reply = try await make(call)
        if let reply { cache.keep(reply, for: call, madeAt: generation) }
        return reply
    }
}
