import Foundation
import Testing
import TonearmCore
import TonearmEngine
import TonearmMedia

@testable import TonearmPlayer

/// The adapter's table: every engine event, about the current item and about another one, with
/// the seek token and the play/pause intent current or stale. The expected actions are written
/// out by hand, not derived from the implementation.
@Suite("Adapter: engine event → actions, every case", .timeLimit(.minutes(1)))
struct EngineEventAdapterTests {
    static let current = 7
    static let next = 8
    static let other = 3
    static let failure = EngineFailure(.deviceLost, "audio device 'x' lost: No such device")
    static let fileFailure = EngineFailure(.unsupportedFormat, "not a media file FFmpeg can read: /x.mp3")
    static let networkFailure = EngineFailure(.network, "http://radio/x: the connection was lost and not regained")
    static let info = MediaInfo(
        url: "/a.wav", duration: 1, codec: "pcm_s16le", container: "wav", sampleRate: 44100,
        channels: 2, bitsPerSample: nil, title: nil, artist: nil, album: nil,
        outputFormat: PCMFormat(sampleType: .s16, sampleRate: 44100, channels: 2))

    /// The context every row starts from: item 7 current, 8 named next, seek 5 expected, intent 4.
    static let context = AdapterContext(currentItem: current, pendingNext: next, expectedSeekToken: 5, intent: 4)

    struct Row: Sendable, CustomTestStringConvertible {
        let name: String
        let event: EngineEvent
        var skipsFailures = false
        let actions: [PlaybackAction]
        /// What the context must be afterwards (nil: unchanged).
        var after: AdapterContext?
        var testDescription: String { name }
    }

    static let rows: [Row] = {
        let f = failure
        var advanced = context
        advanced.currentItem = next
        advanced.pendingNext = nil
        advanced.expectedSeekToken = nil
        var seekDone = context
        seekDone.expectedSeekToken = nil
        return [
            Row(name: "loadStarted", event: .loadStarted(itemID: current, url: "/a.wav"), actions: []),
            Row(name: "opened", event: .opened(itemID: current, info), actions: []),
            Row(name: "firstAudioWritten", event: .firstAudioWritten(itemID: current, latency: 0.01), actions: []),
            Row(name: "underrun", event: .underrun(itemID: current), actions: []),
            // A dropped stream's retries and its titles are news for clients, not for the machine:
            // the pipe running dry meanwhile is what makes it `buffering`.
            Row(name: "reconnecting", event: .reconnecting(itemID: current, attempt: 2, delay: 1), actions: []),
            Row(name: "streamTitle", event: .streamTitle(itemID: current, StreamTitle(streamTitle: "A - B")), actions: []),
            // The machine follows the player's own commands and the buffering news; the output's
            // play state is news for observers (the performance observer).
            Row(name: "timeControlChanged playing", event: .timeControlChanged(itemID: current, .playing), actions: []),
            Row(name: "timeControlChanged paused", event: .timeControlChanged(itemID: current, .paused), actions: []),
            // A measurement on the way is kept by the player; the state is not the machine's concern.
            Row(
                name: "loudnessMeasured",
                event: .loudnessMeasured(
                    itemID: current, url: URL(fileURLWithPath: "/a.wav"),
                    .measured(Loudness(integrated: -20, range: 3, truePeak: -1))),
                actions: []),
            Row(
                name: "loudnessMeasured, given up", event: .loudnessMeasured(itemID: current, url: URL(fileURLWithPath: "/a.wav"), nil),
                actions: []),
            // Letting the device sleep changes nothing the machine knows: the next play opens it.
            Row(name: "deviceReleased", event: .deviceReleased(itemID: current), actions: []),
            Row(
                name: "outputHookRan",
                event: .outputHookRan(
                    itemID: current,
                    OutputHookRun(
                        moment: .onClose, command: ["relay", "off"], outcome: .exited(1), seconds: 0.01)), actions: []),
            Row(name: "ready current", event: .ready(itemID: current), actions: [.didBecomeReady]),
            Row(name: "ready of a replaced item", event: .ready(itemID: other), actions: []),
            Row(name: "started: the item named next", event: .started(itemID: next), actions: [.didAdvance], after: advanced),
            Row(name: "started: an item never named next", event: .started(itemID: other), actions: []),
            Row(name: "started: the current item again", event: .started(itemID: current), actions: []),
            Row(name: "didPlayToEnd current", event: .didPlayToEnd(itemID: current), actions: [.didReachEnd]),
            Row(name: "didPlayToEnd other", event: .didPlayToEnd(itemID: other), actions: []),
            Row(name: "failed current", event: .failed(itemID: current, f), actions: [.didFail(PlaybackError(f))]),
            Row(
                name: "failed current file in a queue that skips", event: .failed(itemID: current, fileFailure), skipsFailures: true,
                actions: []),
            Row(
                name: "failed device in a queue that skips", event: .failed(itemID: current, f), skipsFailures: true,
                actions: [.didFail(PlaybackError(f))]),
            Row(
                name: "stream lost for good, loaded alone", event: .failed(itemID: current, networkFailure),
                actions: [.didFail(PlaybackError(networkFailure))]),
            Row(
                name: "stream lost for good in a queue that skips", event: .failed(itemID: current, networkFailure),
                skipsFailures: true, actions: []),
            Row(name: "failed next (the player skips it)", event: .failed(itemID: next, f), actions: []),
            Row(name: "failed other", event: .failed(itemID: other, f), actions: []),
            Row(
                name: "seek landed: the latest", event: .seekCompleted(itemID: current, token: 5, position: 1),
                actions: [.didFinishSeeking], after: seekDone),
            Row(name: "seek landed: an earlier one", event: .seekCompleted(itemID: current, token: 4, position: 1), actions: []),
            Row(name: "seek landed: the engine's own", event: .seekCompleted(itemID: current, token: Int.min, position: 1), actions: []),
            Row(name: "seek landed: other item", event: .seekCompleted(itemID: other, token: 5, position: 1), actions: []),
            Row(name: "bufferingStarted", event: .bufferingStarted(itemID: current, intent: 4), actions: [.didStartBuffering]),
            Row(name: "bufferingStarted before the latest pause", event: .bufferingStarted(itemID: current, intent: 3), actions: []),
            Row(name: "bufferingStarted other", event: .bufferingStarted(itemID: other, intent: 4), actions: []),
            Row(name: "bufferingEnded", event: .bufferingEnded(itemID: current, intent: 4), actions: [.didFinishBuffering]),
            Row(name: "bufferingEnded before the latest command", event: .bufferingEnded(itemID: current, intent: 2), actions: []),
            Row(name: "deviceLost", event: .deviceLost(itemID: current, f, intent: 4), actions: [.deviceLost]),
            Row(name: "deviceLost before the latest command", event: .deviceLost(itemID: current, f, intent: 3), actions: []),
            Row(name: "deviceLost other", event: .deviceLost(itemID: other, f, intent: 4), actions: []),
            Row(
                name: "deviceRestored, resumes", event: .deviceRestored(itemID: current, resumes: true, intent: 4),
                actions: [.deviceRestored]),
            Row(name: "deviceRestored, stays paused", event: .deviceRestored(itemID: current, resumes: false, intent: 4), actions: []),
            Row(
                name: "deviceRestored, resumes, before a pause", event: .deviceRestored(itemID: current, resumes: true, intent: 3),
                actions: []),
            Row(name: "deviceRestored other", event: .deviceRestored(itemID: other, resumes: true, intent: 4), actions: []),
        ]
    }()

    @Test(arguments: rows)
    func row(_ row: Row) {
        var context = Self.context
        context.skipsFailures = row.skipsFailures
        var expectedAfter = row.after ?? Self.context
        expectedAfter.skipsFailures = row.skipsFailures
        let actions = EngineEventAdapter.actions(for: row.event, context: &context)
        #expect(actions == row.actions)
        #expect(context == expectedAfter)
    }

    /// One kind per `EngineEvent` case, by a switch the compiler checks: a new event case does
    /// not compile until it is named here, and then `everyEventKindHasARow` fails until it has rows.
    enum EventKind: CaseIterable {
        case loadStarted, opened, ready, started, didPlayToEnd, failed, seekCompleted, bufferingStarted
        case bufferingEnded, firstAudioWritten, underrun, deviceLost, deviceRestored, reconnecting, streamTitle
        case timeControlChanged, loudnessMeasured, deviceReleased, outputHookRan

        init(_ event: EngineEvent) {
            switch event {
            case .loadStarted: self = .loadStarted
            case .opened: self = .opened
            case .ready: self = .ready
            case .started: self = .started
            case .didPlayToEnd: self = .didPlayToEnd
            case .failed: self = .failed
            case .seekCompleted: self = .seekCompleted
            case .bufferingStarted: self = .bufferingStarted
            case .bufferingEnded: self = .bufferingEnded
            case .firstAudioWritten: self = .firstAudioWritten
            case .underrun: self = .underrun
            case .deviceLost: self = .deviceLost
            case .deviceRestored: self = .deviceRestored
            case .reconnecting: self = .reconnecting
            case .streamTitle: self = .streamTitle
            case .timeControlChanged: self = .timeControlChanged
            case .loudnessMeasured: self = .loudnessMeasured
            case .deviceReleased: self = .deviceReleased
            case .outputHookRan: self = .outputHookRan
            }
        }
    }

    @Test func everyEventKindHasARow() {
        let covered = Set(Self.rows.map { EventKind($0.event) })
        #expect(covered == Set(EventKind.allCases), "kinds without rows: \(Set(EventKind.allCases).subtracting(covered))")
    }

    /// A stale echo never moves the state machine: news of the play state from before the user's
    /// pause is dropped whatever the state machine would accept.
    @Test func aStaleEchoCannotMoveTheMachine() {
        let machine = PlaybackStateMachine(initialState: .paused)
        var context = AdapterContext(currentItem: 1, intent: 10)
        for event: EngineEvent in [
            .bufferingStarted(itemID: 1, intent: 9), .bufferingEnded(itemID: 1, intent: 9),
            .deviceRestored(itemID: 1, resumes: true, intent: 9),
        ] {
            for action in EngineEventAdapter.actions(for: event, context: &context) { machine.send(action) }
        }
        #expect(machine.currentState == .paused)
    }
}
