import NIOCore
import TonearmSync

/// An answer encoded once per change of what it is made from, then sent as the same bytes to
/// every client that asks. Idle, stopped or paused, a player's status does not change between
/// requests, so building the answer (a JSON tree with sorted keys, or MPD's twenty lines) costs
/// once; playing, the position moves, so each request differs and is encoded anew. Shared by
/// every connection of a front-end: the lock is held for one comparison and, on a change, one
/// encoding. Used for `status` by both protocols.
package final class EncodedOnce<Source: Equatable & Sendable>: Sendable {
    private let last = Locked<(source: Source, bytes: ByteBuffer)?>(nil)

    package init() {}

    /// The bytes for `source`: the stored ones when it equals the last source, else `encode`'s.
    package func bytes(for source: Source, encode: (Source) -> ByteBuffer) -> ByteBuffer {
        last.withLock { last in
            if let cached = last, cached.source == source { return cached.bytes }
            let bytes = encode(source)
            last = (source, bytes)
            return bytes
        }
    }
}
