import Testing
import TonearmCore

/// The announcement overlay: every phase × every event kind has a row, so a new case fails
/// until it has one.
@Suite("Announcement overlay: every phase × event")
struct AnnouncementOverlayTests {
    typealias Overlay = AnnouncementOverlay
    static let point = Overlay.ReturnPoint(queueID: 7, position: 42.5, playing: true, live: false)
    static let later = Overlay.ReturnPoint(queueID: 9, position: 1, playing: false, live: false)
    static let chime = Overlay.Clip(url: "file:///chime.wav", volume: 60)
    static let speech = Overlay.Clip(url: "http://tts/1.mp3", volume: nil)
    static let third = Overlay.Clip(url: "file:///third.wav", volume: nil)
    static let doorbell = Overlay.Clip(url: "file:///doorbell.wav", volume: 80, duck: true)
    static let paused = Overlay.ReturnPoint(queueID: 7, position: 42.5, playing: false, live: false)

    enum EventKind: CaseIterable { case announce, clipEnded, clipFailed, interrupted }

    static func kind(_ event: Overlay.Event) -> EventKind {
        switch event {
        case .announce: .announce
        case .clipEnded: .clipEnded
        case .clipFailed: .clipFailed
        case .interrupted: .interrupted
        }
    }

    /// An overlay in `phase` (chime playing, or the doorbell ducking; speech waiting when more wait).
    static func overlay(_ phase: Overlay.Phase) -> Overlay {
        var overlay = Overlay()
        switch phase {
        case .quiet: break
        case .announcing, .announcingWithMoreWaiting: _ = overlay.handle(.announce(chime, returnPoint: point))
        case .ducking, .duckingWithMoreWaiting: _ = overlay.handle(.announce(doorbell, returnPoint: point))
        }
        if phase == .announcingWithMoreWaiting || phase == .duckingWithMoreWaiting {
            _ = overlay.handle(.announce(speech, returnPoint: later))
        }
        return overlay
    }

    struct Row: Sendable, CustomStringConvertible {
        let phase: Overlay.Phase
        let event: Overlay.Event
        let effect: Overlay.Effect
        let after: Overlay.Phase
        let playing: Overlay.Clip?
        var description: String { "\(phase) + \(event)" }
    }

    static let rows: [Row] = [
        Row(phase: .quiet, event: .announce(third, returnPoint: later), effect: .fadeOutAndPlay(third), after: .announcing, playing: third),
        Row(phase: .quiet, event: .clipEnded, effect: .none, after: .quiet, playing: nil),
        Row(phase: .quiet, event: .clipFailed, effect: .none, after: .quiet, playing: nil),
        Row(phase: .quiet, event: .interrupted, effect: .none, after: .quiet, playing: nil),
        // A second one waits; the point to come back to stays the first one's.
        Row(
            phase: .announcing, event: .announce(third, returnPoint: later), effect: .queued(position: 1),
            after: .announcingWithMoreWaiting, playing: chime),
        Row(phase: .announcing, event: .clipEnded, effect: .resume(point), after: .quiet, playing: nil),
        Row(phase: .announcing, event: .clipFailed, effect: .resume(point), after: .quiet, playing: nil),
        Row(phase: .announcing, event: .interrupted, effect: .abandon(point), after: .quiet, playing: nil),
        Row(
            phase: .announcingWithMoreWaiting, event: .announce(third, returnPoint: later), effect: .queued(position: 2),
            after: .announcingWithMoreWaiting, playing: chime),
        Row(phase: .announcingWithMoreWaiting, event: .clipEnded, effect: .play(speech), after: .announcing, playing: speech),
        Row(phase: .announcingWithMoreWaiting, event: .clipFailed, effect: .play(speech), after: .announcing, playing: speech),
        Row(phase: .announcingWithMoreWaiting, event: .interrupted, effect: .abandon(point), after: .quiet, playing: nil),
        // Ducking: the music plays on under the clips; nothing to come back to, the level comes back.
        // One that joins the run ducks too, whatever it asked.
        Row(
            phase: .ducking, event: .announce(third, returnPoint: later), effect: .queued(position: 1),
            after: .duckingWithMoreWaiting, playing: doorbell),
        Row(phase: .ducking, event: .clipEnded, effect: .unduck, after: .quiet, playing: nil),
        Row(phase: .ducking, event: .clipFailed, effect: .unduck, after: .quiet, playing: nil),
        Row(phase: .ducking, event: .interrupted, effect: .abandonDucked, after: .quiet, playing: nil),
        Row(
            phase: .duckingWithMoreWaiting, event: .announce(third, returnPoint: later), effect: .queued(position: 2),
            after: .duckingWithMoreWaiting, playing: doorbell),
        Row(phase: .duckingWithMoreWaiting, event: .clipEnded, effect: .play(speech), after: .ducking, playing: speech),
        Row(phase: .duckingWithMoreWaiting, event: .clipFailed, effect: .play(speech), after: .ducking, playing: speech),
        Row(phase: .duckingWithMoreWaiting, event: .interrupted, effect: .abandonDucked, after: .quiet, playing: nil),
    ]

    @Test(arguments: rows)
    func row(_ row: Row) {
        var overlay = Self.overlay(row.phase)
        #expect(overlay.phase == row.phase)
        #expect(overlay.handle(row.event) == row.effect)
        #expect(overlay.phase == row.after && overlay.playing == row.playing)
        let ducked = row.phase == .ducking || row.phase == .duckingWithMoreWaiting
        #expect(overlay.returnPoint == (row.after == .quiet || ducked ? nil : Self.point) || row.phase == .quiet)
    }

    /// Ducking needs something playing to lower: over a pause, the clip plays as any other, and
    /// playback comes back to the point after it.
    @Test func aDuckOverNothingPlayingInterruptsAsUsual() {
        var overlay = Overlay()
        #expect(overlay.handle(.announce(Self.doorbell, returnPoint: Self.paused)) == .fadeOutAndPlay(Self.doorbell))
        #expect(overlay.phase == .announcing && overlay.returnPoint == Self.paused)
        #expect(overlay.handle(.clipEnded) == .resume(Self.paused))
    }

    /// The first of a run decides: a duck that joins an interrupting run interrupts, and a plain
    /// one that joins a ducking run ducks.
    @Test func theFirstOfARunDecides() {
        var interrupting = Self.overlay(.announcing)
        _ = interrupting.handle(.announce(Self.doorbell, returnPoint: Self.later))
        #expect(interrupting.handle(.clipEnded) == .play(Self.doorbell) && interrupting.phase == .announcing)
        #expect(interrupting.handle(.clipEnded) == .resume(Self.point))
        var ducking = Overlay()
        #expect(ducking.handle(.announce(Self.doorbell, returnPoint: Self.point)) == .duckAndPlay(Self.doorbell))
        _ = ducking.handle(.announce(Self.chime, returnPoint: Self.point))
        #expect(ducking.handle(.clipEnded) == .play(Self.chime) && ducking.phase == .ducking)
        #expect(ducking.handle(.clipEnded) == .unduck && ducking.phase == .quiet && !ducking.ducks)
    }

    @Test func everyPhaseAndEventKindHasARow() {
        let covered = Set(Self.rows.map { "\($0.phase)/\(Self.kind($0.event))" })
        let all = Set(Overlay.Phase.allCases.flatMap { phase in EventKind.allCases.map { "\(phase)/\($0)" } })
        #expect(covered == all, "missing: \(all.subtracting(covered))")
    }

    @Test func theFirstReturnPointIsKeptToTheEnd() {
        var overlay = Self.overlay(.announcingWithMoreWaiting)
        _ = overlay.handle(.announce(Self.third, returnPoint: Self.later))
        #expect(overlay.handle(.clipEnded) == .play(Self.speech))
        #expect(overlay.handle(.clipFailed) == .play(Self.third))
        #expect(overlay.handle(.clipEnded) == .resume(Self.point))
        #expect(overlay.handle(.clipEnded) == .none)
    }

    @Test func noMoreThanSixteenWait() {
        var overlay = Self.overlay(.announcing)
        for n in 1...Overlay.maximumWaiting {
            #expect(overlay.handle(.announce(Self.third, returnPoint: Self.later)) == .queued(position: n))
        }
        #expect(overlay.handle(.announce(Self.third, returnPoint: Self.later)) == .refused)
        #expect(overlay.waiting.count == Overlay.maximumWaiting)
    }
}
