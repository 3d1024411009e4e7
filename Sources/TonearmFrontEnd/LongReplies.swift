import NIOCore

/// Where replies that list the whole queue are encoded when it is long (MPD's `playlistinfo`,
/// `plchanges`, …; JSON-RPC's `queue`): on a thread of their own, not on the event loop. A
/// 10,000-item listing takes a good part of a second to encode, and the one event loop serves
/// every client: encoded there, it would hold up every other client's `ping` that long. Short
/// listings are encoded at once, on the loop, which costs less than the hop.
///
/// The request that asked waits meanwhile (its connection reads nothing more), so replies
/// still go out in order; one thread, so that a flood of such requests from many clients
/// takes one core at most, and the player's own tasks keep the cooperative pool.
package final class LongReplies: Sendable {
    /// Queue listings of up to this many items are encoded on the event loop (a few
    /// milliseconds at most).
    package static let inlineItems = 256

    private let worker = BlockingWorker(name: "tonearm-replies")

    package init() {}

    package static func isLong(_ items: Int) -> Bool { items > inlineItems }

    /// Encodes a reply on the worker's thread.
    package func encode<T: Sendable, E: Error>(_ job: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
        try await worker.run(job)
    }

    package func shutdown() { worker.shutdown() }
}
