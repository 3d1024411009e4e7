import Foundation
import Testing
import TonearmEngine
import TonearmMedia
import TonearmSync
import TonearmTestSupport

/// Collects an engine's events as they are delivered on its observer queue.
final class EngineRecorder: Sendable {
    final class Log: Sendable {
        let events = Locked<[EngineEvent]>([])
    }
    private let log = Log()
    private let tokens: [ObservationToken]

    init(_ engine: PlayerEngine) {
        let log = self.log
        tokens = [
            engine.observeEvents { _, event in log.events.withLock { $0.append(event) } }
        ]
    }

    var recorded: [EngineEvent] { log.events.withLock { $0 } }

    func contains(_ predicate: (EngineEvent) -> Bool) -> Bool { log.events.withLock { $0.contains(where: predicate) } }

    var ended: Bool { contains { if case .didPlayToEnd = $0 { true } else { false } } }
    var failure: EngineFailure? {
        log.events.withLock { events in
            for case .failed(_, let failure) in events { return failure }
            return nil
        }
    }
    func seekCompleted(token: Int) -> Double? {
        log.events.withLock { events in
            for case .seekCompleted(_, let t, let position) in events where t == token { return position }
            return nil
        }
    }
}

private let testItemIDs = Locked(0)

extension EngineItem {
    /// An item with a fresh id, greater than every one before it (as the player's queue gives).
    static func fresh(_ url: URL) -> EngineItem {
        let id = testItemIDs.withLock { id in
            id += 1
            return id
        }
        return EngineItem(id: id, url: url)
    }
}

extension PlayerEngine {
    /// Opens `url` as a new item with a fresh id (what the player does for a load).
    @discardableResult
    func load(url: URL, startAt: Double = 0) -> Int {
        let item = EngineItem.fresh(url)
        open(item, startAt: startAt)
        return item.id
    }
}

/// An engine on `device` with a recorder, `fixture` loaded and ready.
func readyEngine(
    _ fixture: String, device: String,
    sourceLocation: SourceLocation = #_sourceLocation
) async -> (PlayerEngine, EngineRecorder) {
    let engine = PlayerEngine(configuration: OutputConfiguration(device: device))
    let recorder = EngineRecorder(engine)
    engine.load(url: Fixtures.url(fixture))
    #expect(await eventually { engine.status == .readyToPlay }, sourceLocation: sourceLocation)
    return (engine, recorder)
}
