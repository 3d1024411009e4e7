import Foundation
import Testing
import TonearmEngine
import TonearmMedia
import TonearmSync
import TonearmTestSupport

/// `observe(\.property)` is a view of the event stream: each change arrives with the event that
/// carried it, about the item it names, in the stream's order.
@Suite("Engine observation is one channel", .serialized, .timeLimit(.minutes(1)))
struct EngineObservationTests {
    /// What one observer of everything saw: events, and the changes of two properties, in the
    /// one order the delivery thread ran them.
    final class Seen: Sendable {
        enum Entry: Sendable {
            case event(EngineEvent)
            case playState(ObservedChange<TimeControlStatus>)
            case status(ObservedChange<EngineStatus>)
        }
        let entries = Locked<[Entry]>([])
        func add(_ entry: Entry) { entries.withLock { $0.append(entry) } }
    }

    @Test func everyChangeArrivesWithTheEventThatMadeIt() async throws {
        let engine = PlayerEngine(configuration: OutputConfiguration(device: "null"))
        let seen = Seen()
        let tokens = [
            engine.observeEvents { _, event in seen.add(.event(event)) },
            engine.observe(\.timeControlStatus) { _, change in seen.add(.playState(change)) },
            engine.observe(\.status) { _, change in seen.add(.status(change)) },
        ]
        defer { tokens.forEach { $0.invalidate() } }
        let item = EngineItem.fresh(Fixtures.url("tone.wav"))
        engine.open(item, playing: true)
        let ended = {
            seen.entries.withLock { $0.contains { if case .event(.didPlayToEnd(item.id)) = $0 { true } else { false } } }
        }
        #expect(await eventually { ended() })
        #expect(await eventually { engine.timeControlStatus == .paused })
        engine.shutdown()
        await engine.waitUntilShutDown()

        let entries = seen.entries.withLock { $0 }
        var lastEvent: EngineEvent?
        var playStates: [TimeControlStatus] = []
        var statusEvents: [EngineEvent] = []
        for entry in entries {
            switch entry {
            case .event(let event):
                lastEvent = event
            case .playState(let change):
                // Delivered right after the event that carried it, and about the item it names.
                #expect(
                    change.event != nil && change.event == lastEvent, "\(change.newValue) came with \(String(describing: change.event))")
                #expect(change.itemID == item.id)
                if case .timeControlChanged(let id, let status) = change.event {
                    #expect(id == item.id && status == change.newValue)
                } else {
                    Issue.record("a play-state change came with \(String(describing: change.event))")
                }
                playStates.append(change.newValue)
            case .status(let change):
                #expect(change.event != nil && change.event == lastEvent)
                #expect(change.itemID == item.id)
                if let event = change.event { statusEvents.append(event) }
            }
        }
        #expect(playStates == [.playing, .paused], "\(playStates)")
        #expect(
            statusEvents.first == .ready(itemID: item.id) || statusEvents.first == .timeControlChanged(itemID: item.id, .paused),
            "readiness arrives with the item's first event after it: \(statusEvents)")
    }

    /// Nothing is delivered without an event: a change waits for the next one.
    @Test func anInitialValueIsTheOnlyChangeWithoutAnEvent() async throws {
        let engine = PlayerEngine(configuration: OutputConfiguration(device: "null"))
        let changes = Locked<[ObservedChange<TimeControlStatus>]>([])
        let token = engine.observe(\.timeControlStatus, options: [.initial, .new]) { _, change in changes.withLock { $0.append(change) } }
        defer { token.invalidate() }
        #expect(await eventually { changes.withLock { $0.count } == 1 })
        let first = changes.withLock { $0[0] }
        #expect(first.event == nil && first.oldValue == nil && first.newValue == .paused)
        engine.shutdown()
        await engine.waitUntilShutDown()
    }
}
