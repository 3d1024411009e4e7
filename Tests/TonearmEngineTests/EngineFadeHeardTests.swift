import Foundation
import Testing
import TonearmEngine
import TonearmMedia
import TonearmTestSupport

/// `fadeHeard`: a caller (the player's jump after a manual fade) learns when the fade's last
/// frame is heard, from the output, not from a clock of its own; a fade that will not be heard
/// lets it go at once.
@Suite("Engine says when a fade is heard", .serialized, .timeLimit(.minutes(1)))
struct EngineFadeHeardTests {
    @Test func aFadeIsHeardWholeWhenTheEngineSaysSo() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let engine = PlayerEngine(configuration: OutputConfiguration(device: dir.fileDevice("out.raw"), pace: true, speed: 2))
        engine.load(url: Fixtures.url("tone.wav"))
        #expect(await eventually { engine.status == .readyToPlay })
        engine.play()
        #expect(await eventually { engine.currentTime >= 0.3 })
        let asked = Date()
        let serial = engine.fade(to: 0, over: 0.2)
        await engine.fadeHeard(serial)
        let took = Date().timeIntervalSince(asked)
        let heardFrame = Int((engine.currentTime * 44_100).rounded(.down))
        // The file: plugin writes its buffer out in periods: the capture is whole once closed.
        engine.shutdown()
        await engine.waitUntilShutDown()
        let pcm = try Data(contentsOf: URL(fileURLWithPath: dir.path("out.raw")))
        let samples = pcm.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        // The fade stays at 0: its end is where the capture falls silent for good.
        let fadeEnd = try #require(samples.lastIndex { $0 != 0 }) / 2 + 1
        // Heard once its last frame is behind the ear (how soon after is `took`'s bound: this
        // position is read when the test's task runs again, late on a busy pool).
        #expect(fadeEnd <= heardFrame, "the fade ended at \(fadeEnd), heard at \(heardFrame)")
        #expect(took >= 0.2 && took < 1 * Sanitizer.timeScale, "heard \(took) s after it was asked")
    }

    @Test func aFadeReplacedOrNotPlayingIsNotWaitedFor() async throws {
        let engine = PlayerEngine(configuration: OutputConfiguration(device: "null", pace: true))
        engine.load(url: Fixtures.url("tone.wav"))
        #expect(await eventually { engine.status == .readyToPlay })
        // Ready, not playing: nothing will be written.
        var asked = Date()
        await engine.fadeHeard(engine.fade(to: 0, over: 10))
        #expect(Date().timeIntervalSince(asked) < 0.5)
        engine.play()
        #expect(await eventually { engine.currentTime >= 0.2 })
        let long = engine.fade(to: 0, over: 10)
        asked = Date()
        async let waited: Void = engine.fadeHeard(long)
        try await Task.sleep(for: .milliseconds(100))
        engine.fade(to: 1, over: 0)
        await waited
        #expect(Date().timeIntervalSince(asked) < 1 * Sanitizer.timeScale, "a fade replaced lets its waiter go")
        engine.shutdown()
        await engine.waitUntilShutDown()
    }
}
