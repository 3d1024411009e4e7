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

    enum EventKind: CaseIterable { case announce, clipEnded, clipFailed, interrupted }

    static func kind(_ event: Overlay.Event) -> EventKind {
        switch event {
        case .announce: .announce
        case .clipEnded: .clipEnded
        case .clipFailed: .clipFailed
        case .interrupted: .interrupted
        }
    }

    /// An overlay in `phase` (chime playing; speech waiting when more wait).
    static func overlay(_ phase: Overlay.Phase) -> Overlay {
        var overlay = Overlay()
        if phase != .quiet { _ = overlay.handle(.announce(chime, returnPoint: point)) }
        if phase == .announcingWithMoreWaiting { _ = overlay.handle(.announce(speech, returnPoint: later)) }
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
        Row(phase: .announcing, event: .announce(third, returnPoint: later), effect: .queued(position: 1),
            after: .announcingWithMoreWaiting, playing: chime),
        Row(phase: .announcing, event: .clipEnded, effect: .resume(point), after: .quiet, playing: nil),
        Row(phase: .announcing, event: .clipFailed, effect: .resume(point), after: .quiet, playing: nil),
        Row(phase: .announcing, event: .interrupted, effect: .abandon(point), after: .quiet, playing: nil),
        Row(phase: .announcingWithMoreWaiting, event: .announce(third, returnPoint: later), effect: .queued(position: 2),
            after: .announcingWithMoreWaiting, playing: chime),
        Row(phase: .announcingWithMoreWaiting, event: .clipEnded, effect: .play(speech), after: .announcing, playing: speech),
        Row(phase: .announcingWithMoreWaiting, event: .clipFailed, effect: .play(speech), after: .announcing, playing: speech),
        Row(phase: .announcingWithMoreWaiting, event: .interrupted, effect: .abandon(point), after: .quiet, playing: nil),
    ]

    @Test(arguments: rows)
    func row(_ row: Row) {
        var overlay = Self.overlay(row.phase)
        #expect(overlay.phase == row.phase)
        #expect(overlay.handle(row.event) == row.effect)
        #expect(overlay.phase == row.after && overlay.playing == row.playing)
        #expect(overlay.returnPoint == (row.after == .quiet ? nil : Self.point) || row.phase == .quiet)
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
        for n in 1...Overlay.maximumWaiting { #expect(overlay.handle(.announce(Self.third, returnPoint: Self.later)) == .queued(position: n)) }
        #expect(overlay.handle(.announce(Self.third, returnPoint: Self.later)) == .refused)
        #expect(overlay.waiting.count == Overlay.maximumWaiting)
    }
}
