import Foundation
import Testing
import TonearmCore

@testable import TonearmUPnP

/// What a control point sees for each playback state: one row per state (`name` names every
/// case, so a new state does not compile until it has a row here).
@Suite("TransportView: every playback state as AVTransport shows it")
struct TransportViewTests {
    static let rows: [(PlaybackState, state: String, actions: String)] = [
        (.idle, "STOPPED", "Play,Stop"),
        (.loading(URL(string: "http://x/a.flac")!), "TRANSITIONING", "Stop"),
        (.ready, "STOPPED", "Play,Stop"),
        (.playing, "PLAYING", "Pause,Stop,Seek"),
        (.paused, "PAUSED_PLAYBACK", "Play,Stop,Seek"),
        (.buffering(previousState: .playing), "PLAYING", "Pause,Stop,Seek"),
        (.buffering(previousState: .paused), "PAUSED_PLAYBACK", "Play,Stop,Seek"),
        (.seeking(to: 1, previousState: .playing), "PLAYING", "Pause,Stop,Seek"),
        (.seeking(to: 1, previousState: .paused), "PAUSED_PLAYBACK", "Play,Stop,Seek"),
        (.ended, "STOPPED", "Play,Stop"),
        (.failed(PlaybackError(.network, "gone")), "STOPPED", "Play,Stop"),
    ]

    static func name(_ state: PlaybackState) -> String {
        switch state {
        case .idle: "idle"
        case .loading: "loading"
        case .ready: "ready"
        case .playing: "playing"
        case .paused: "paused"
        case .buffering: "buffering"
        case .seeking: "seeking"
        case .ended: "ended"
        case .failed: "failed"
        }
    }

    @Test func everyStateHasARow() {
        #expect(Set(Self.rows.map { Self.name($0.0) }).count == 9)
    }

    static let cast = CastRecord(uri: "http://x/a.flac", metadata: "")

    @Test(arguments: rows.indices)
    func aCastShowsTheStateAndWhatMayBeAsked(_ row: Int) {
        let (state, shown, actions) = Self.rows[row]
        let view = TransportView(.init(cast: Self.cast, state: state, duration: 3, volume: 40, muted: false))
        #expect(view.transportState == shown)
        #expect(view.avTransport("CurrentTransportActions") == actions)
        #expect(view.transportStatus == (Self.name(state) == "failed" ? "ERROR_OCCURRED" : "OK"))
        // A next URI adds Next; a live stream (no duration) cannot seek.
        var withNext = Self.cast
        withNext.nextURI = "http://x/b.flac"
        #expect(TransportView(.init(cast: withNext, state: state, duration: 3, volume: 40, muted: false)).actions.last == "Next")
        #expect(!TransportView(.init(cast: Self.cast, state: state, live: true, volume: 40, muted: false)).actions.contains("Seek"))
    }

    @Test(arguments: rows.indices)
    func withNoCastThereIsNoMediaAndNothingToAsk(_ row: Int) {
        let view = TransportView(.init(cast: nil, state: Self.rows[row].0, volume: 40, muted: false))
        #expect(view.transportState == "NO_MEDIA_PRESENT")
        #expect(view.actions.isEmpty)
        #expect(view.avTransport("AVTransportURI") == "")
        #expect(view.avTransport("NumberOfTracks") == "0")
    }

    @Test func timesAreHoursMinutesSecondsWithoutFraction() {
        #expect(TransportView.time(0) == "0:00:00")
        #expect(TransportView.time(65.9) == "0:01:05")
        #expect(TransportView.time(3600 * 12 + 59) == "12:00:59")
        #expect(TransportView.time(nil) == "0:00:00")
        #expect(TransportView.time(.nan) == "0:00:00")
        #expect(DIDLMetadata.seconds("0:1:5") == 65)
        #expect(DIDLMetadata.seconds("1:00:00.500") == 3600.5)
        #expect(DIDLMetadata.seconds("1:00") == nil)
        #expect(DIDLMetadata.seconds("-1:00:00") == nil)
    }

    @Test func muteKeepsTheLevelShown() {
        let view = TransportView(.init(cast: nil, state: .idle, volume: 40, muted: true))
        #expect(view.renderingControl.first { $0.0 == "Volume" }?.1 == "40")
        #expect(view.renderingControl.first { $0.0 == "Mute" }?.1 == "1")
    }
}
