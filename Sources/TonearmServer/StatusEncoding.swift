import NIOCore
import TonearmPlayer
import TonearmSync

/// The `status` answer, encoded once per change of the player's status and then sent as the same
/// bytes to every client that asks. Idle, stopped or paused, a status does not change between
/// requests, so building its tree, sorting its keys and writing it cost once; playing, the
/// position moves, so each request differs and is encoded anew. Shared by every connection: the
/// lock is held for one comparison and, on a change, one encoding.
final class StatusEncoding: Sendable {
    private let last = Locked<(status: PlayerStatus, bytes: ByteBuffer)?>(nil)

    func encoded(_ status: PlayerStatus) -> JSONValue {
        last.withLock { last in
            if let cached = last, cached.status == status { return .encoded(cached.bytes) }
            var bytes = ByteBuffer()
            JSONCoding.serialize(ProtocolEncoding.status(status), into: &bytes)
            last = (status, bytes)
            return .encoded(bytes)
        }
    }
}
