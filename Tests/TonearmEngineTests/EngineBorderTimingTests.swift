import Foundation
import Testing
import TonearmEngine
import TonearmMedia
import TonearmSync
import TonearmTestSupport

/// `started` (and with it the player's `item` event, `status.current` and the position) must
/// come when the next item's first sample is heard, not at the next write after it: a paced
/// device is written 250 ms at a time, and a border crossed only at writes came up to that late.
@Suite("Engine: a gapless border is reported when it is heard", .serialized, .timeLimit(.minutes(1)))
struct EngineBorderTimingTests {
    @Test func startedComesAtTheBorderOnAPacedDevice() async throws {
        let engine = PlayerEngine(configuration: OutputConfiguration(device: "null", pace: true))
        // Where the engine hears the started item when the news is delivered.
        let heardAtStart = Locked<[Int: Double]>([:])
        let token = engine.observeEvents { engine, event in
            guard case .started(let itemID) = event else { return }
            let heard = engine.heard
            if heard.itemID == itemID { heardAtStart.withLock { $0[itemID] = heard.seconds } }
        }
        let first = engine.load(url: Fixtures.url("tone.flac"))
        #expect(await eventually { engine.status == .readyToPlay })
        let second = EngineItem.fresh(Fixtures.url("tone.wav"))
        let third = EngineItem.fresh(Fixtures.url("tone.flac"))
        #expect(engine.setNext(second, after: first))
        engine.play()
        #expect(await eventually(timeout: 10) { heardAtStart.withLock { $0[second.id] } != nil })
        #expect(engine.setNext(third, after: second.id))
        #expect(await eventually(timeout: 10) { heardAtStart.withLock { $0[third.id] } != nil })
        engine.shutdown()
        await engine.waitUntilShutDown()
        withExtendedLifetime(token) {}
        for item in [second, third] {
            let seconds = try #require(heardAtStart.withLock { $0[item.id] })
            // A delivery takes a moment; a write's worth (250 ms) late is what this rules out.
            #expect(seconds < 0.06, "item \(item.id) was already heard \(seconds) s when its start was reported")
        }
    }
}
