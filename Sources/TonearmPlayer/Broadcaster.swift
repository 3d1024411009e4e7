import Foundation
import TonearmSync

/// Fans values out to any number of AsyncStream subscribers. Each subscriber has its own
/// bounded buffer (`limit` newest values), so a slow consumer loses old values instead of
/// holding memory without end or slowing the others.
final class Broadcaster<Value: Sendable>: Sendable {
    private let subscribers = Locked<[UUID: AsyncStream<Value>.Continuation]>([:])
    private let limit: Int

    init(limit: Int = 1024) { self.limit = limit }

    func subscribe() -> AsyncStream<Value> {
        let (stream, continuation) = AsyncStream<Value>.makeStream(bufferingPolicy: .bufferingNewest(limit))
        let id = UUID()
        subscribers.withLock { $0[id] = continuation }
        continuation.onTermination = { [weak self] _ in self?.subscribers.withLock { _ = $0.removeValue(forKey: id) } }
        return stream
    }

    func yield(_ value: Value) {
        subscribers.withLock { for continuation in $0.values { continuation.yield(value) } }
    }
}
