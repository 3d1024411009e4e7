import Foundation
import Logging
import Testing
import TonearmCore
import TonearmEngine
import TonearmMedia
import TonearmSync
import TonearmTestSupport

@testable import TonearmPlayer

/// The adapter and coordinator with the real engine on real files.
@Suite("Player: adapter and coordinator on the real engine", .serialized, .timeLimit(.minutes(1)))
struct PlayerAdapterTests {
    private func makePlayer(pace: Bool = false, speed: Double = 1) -> Player { Player.onNullDevice(pace: pace, speed: speed) }

    /// Records every transition into a list the test can read.
    private final class TransitionLog: Sendable {
        let store = Transitions()
        let task: Task<Void, Never>
        init(_ player: Player) {
            let stream = player.transitions()
            let store = self.store
            task = Task { for await t in stream { store.append(t) } }
        }
        var actions: [String] { store.all.map(\.action.name) }
        deinit { task.cancel() }
    }

    private final class Transitions: Sendable {
        private let list = Locked<[PlaybackTransition]>([])
        func append(_ t: PlaybackTransition) { list.withLock { $0.append(t) } }
        var all: [PlaybackTransition] { list.withLock { $0 } }
    }

    @Test func loadPlayToEndThroughTheStateMachine() async throws {
        let player = makePlayer()
        let log = TransitionLog(player)
        let loaded = try await player.load(Fixtures.url("tone.flac"))
        #expect(loaded.media.codec == "flac" && loaded.state == .ready)
        #expect(player.state == .ready)
        #expect(try player.play().didChangeState)
        #expect(await eventually { player.state == .ended })
        #expect(await eventually { log.actions == ["load", "didBecomeReady", "play", "didReachEnd"] }, "\(log.actions)")
        #expect(abs(player.status.position - 3.0) < 0.01)
    }

    @Test func loadWithPlayStartsPlaying() async throws {
        let player = makePlayer(pace: true, speed: 1)
        _ = try await player.load(Fixtures.url("tone.wav"), play: true, start: 1)
        #expect(player.state == .playing)
        #expect(await eventually { player.status.position > 1.05 })
        #expect(try player.pause().didChangeState)
        #expect(try player.pause().didChangeState == false, "pause while paused is accepted and changes nothing")
        #expect(try player.stop().didChangeState)
        #expect(player.state == .idle)
    }

    @Test func seekFromReadyLandsPausedAtThePosition() async throws {
        let player = makePlayer()
        _ = try await player.load(Fixtures.url("tone.wav"))
        let landed = try await player.seek(to: 2)
        #expect(player.state == .paused && landed.state == .paused)
        #expect(landed.position == 2.0)
        let relative = try await player.seek(to: -0.5, relative: true)
        #expect(relative.position == 1.5)
    }

    @Test func playAfterEndRestartsFromTheBeginning() async throws {
        let player = makePlayer()
        _ = try await player.load(Fixtures.url("tone.wav"), play: true)
        #expect(await eventually { player.state == .ended })
        try player.play()
        #expect(
            await eventually { player.state == .ended && player.engine.currentTime > 2.9 }, "\(player.state) \(player.engine.currentTime)")
    }

    @Test func rejectedCommandsNameStateAndAction() async throws {
        let player = makePlayer()
        #expect(throws: PlayerError.rejected(state: .idle, action: .play)) { try player.play() }
        #expect(try player.stop().didChangeState == false, "stop while idle is accepted and changes nothing")
    }

    @Test func brokenFileFailsAndRetryIsRefusedWhenNotRecoverable() async throws {
        let player = makePlayer()
        await #expect(throws: PlayerError.self) { _ = try await player.load(Fixtures.url("notmedia.mp3")) }
        guard case .failed(let error) = player.state else {
            Issue.record("expected failed, got \(player.state)")
            return
        }
        #expect(error.kind == .unsupportedFormat && !error.isRecoverable)
        await #expect(throws: PlayerError.rejected(state: .failed(error), action: .retry)) { _ = try await player.retry() }
        // The player keeps working after a failure.
        _ = try await player.load(Fixtures.url("tone.mp3"))
        #expect(player.state == .ready)
    }

    @Test func missingFileIsRecoverableAndRetryLoadsAgain() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let path = dir.path("later.wav")
        let player = makePlayer()
        await #expect(throws: PlayerError.self) { _ = try await player.load(URL(fileURLWithPath: path)) }
        guard case .failed(let error) = player.state else {
            Issue.record("expected failed")
            return
        }
        #expect(error.kind == .fileNotFound && error.isRecoverable)
        try FileManager.default.copyItem(atPath: Fixtures.path("tone.wav"), toPath: path)
        let retried = try await player.retry()
        #expect(retried.media.codec == "pcm_s16le" && retried.state == .ready && player.state == .ready)
    }

    @Test func performanceEventsReportLoadAndFirstAudio() async throws {
        let player = makePlayer()
        let events = PerformanceLog()
        let stream = player.performanceEvents()
        let task = Task { for await e in stream { events.append(e) } }
        defer { task.cancel() }
        _ = try await player.load(Fixtures.url("tone.wav"), play: true)
        #expect(await eventually { events.all.contains { if case .firstAudio(let l) = $0 { l >= 0 && l < 1 } else { false } } })
        #expect(events.all.contains(.loadStarted(url: Fixtures.url("tone.wav").absoluteString)))
    }

    @Test func resumedMeansPlayingAgainAfterAPause() async throws {
        let player = makePlayer(pace: true, speed: 2)
        let events = PerformanceLog()
        let stream = player.performanceEvents()
        let task = Task { for await e in stream { events.append(e) } }
        defer { task.cancel() }
        _ = try await player.load(Fixtures.url("tone.wav"), play: true)
        #expect(await eventually { events.all.contains { if case .firstAudio = $0 { true } else { false } } })
        #expect(!events.all.contains(.resumed), "starting is not resuming")
        try player.pause()
        #expect(await eventually { player.engine.timeControlStatus == .paused })
        try player.play()
        #expect(await eventually { events.all.contains(.resumed) })
    }

    private final class PerformanceLog: Sendable {
        private let list = Locked<[PerformanceEvent]>([])
        func append(_ e: PerformanceEvent) { list.withLock { $0.append(e) } }
        var all: [PerformanceEvent] { list.withLock { $0 } }
    }
}
