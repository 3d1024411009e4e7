import TonearmSync

/// Fans values out to any number of AsyncStream subscribers. Each subscriber has its own
/// bounded buffer (`limit` newest values), so a slow consumer loses old values instead of
/// holding memory without end or slowing the others.
final class Broadcaster<Value: Sendable>: Sendable {
    private let fanout: StreamFanout<Value>

    init(limit: Int = 1024) { fanout = StreamFanout(bufferingPolicy: .bufferingNewest(limit)) }

    func subscribe() -> AsyncStream<Value> { fanout.subscribe() }

    func yield(_ value: Value) { fanout.yield(value) }
}
