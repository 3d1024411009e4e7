import Foundation
import Testing

@testable import TonearmCore

/// Every state × every action against an explicit table. The table below is written out by
/// hand, not derived from the implementation, so a change to either shows up as a failure.
private let url = URL(fileURLWithPath: "/music/a.flac")
private let otherURL = URL(fileURLWithPath: "/music/b.flac")
private let recoverable = PlaybackError(.deviceUnavailable, "device busy")
private let fatal = PlaybackError(.unsupportedFormat, "not media")

enum S: String, CaseIterable {
    case idle, loading, ready, playing, paused, bufferingPlaying, bufferingPaused
    case seekingPlaying, seekingPaused, ended, failedRecoverable, failedFatal

    var state: PlaybackState {
        switch self {
        case .idle: .idle
        case .loading: .loading(url)
        case .ready: .ready
        case .playing: .playing
        case .paused: .paused
        case .bufferingPlaying: .buffering(previousState: .playing)
        case .bufferingPaused: .buffering(previousState: .paused)
        case .seekingPlaying: .seeking(to: 10, previousState: .playing)
        case .seekingPaused: .seeking(to: 10, previousState: .paused)
        case .ended: .ended
        case .failedRecoverable: .failed(recoverable)
        case .failedFatal: .failed(fatal)
        }
    }
}

enum A: String, CaseIterable {
    case load, play, pause, seek, stop, retry
    case didBecomeReady, didStartBuffering, didFinishBuffering
    case didFinishSeeking, didAdvance, didReachEnd, didFail
    case deviceLost, deviceRestored

    var action: PlaybackAction {
        switch self {
        case .load: .load(otherURL)
        case .play: .play
        case .pause: .pause
        case .seek: .seek(to: 30)
        case .stop: .stop
        case .retry: .retry
        case .didBecomeReady: .didBecomeReady
        case .didStartBuffering: .didStartBuffering
        case .didFinishBuffering: .didFinishBuffering
        case .didFinishSeeking: .didFinishSeeking
        case .didAdvance: .didAdvance
        case .didReachEnd: .didReachEnd
        case .didFail: .didFail(fatal)
        case .deviceLost: .deviceLost
        case .deviceRestored: .deviceRestored
        }
    }
}

// The rows' kinds from the real types, by switches the compiler checks: a new `PlaybackState`
// or `PlaybackAction` case does not compile until it is named here, and then `coverage` fails
// until it has its own row kind (and so a row for every pair).
extension S {
    init(_ state: PlaybackState) {
        switch state {
        case .idle: self = .idle
        case .loading: self = .loading
        case .ready: self = .ready
        case .playing: self = .playing
        case .paused: self = .paused
        case .buffering(.playing): self = .bufferingPlaying
        case .buffering(.paused): self = .bufferingPaused
        case .seeking(_, .playing): self = .seekingPlaying
        case .seeking(_, .paused): self = .seekingPaused
        case .ended: self = .ended
        case .failed(let error): self = error.isRecoverable ? .failedRecoverable : .failedFatal
        }
    }
}

extension A {
    init(_ action: PlaybackAction) {
        switch action {
        case .load: self = .load
        case .play: self = .play
        case .pause: self = .pause
        case .seek: self = .seek
        case .stop: self = .stop
        case .retry: self = .retry
        case .didBecomeReady: self = .didBecomeReady
        case .didStartBuffering: self = .didStartBuffering
        case .didFinishBuffering: self = .didFinishBuffering
        case .didFinishSeeking: self = .didFinishSeeking
        case .didAdvance: self = .didAdvance
        case .didReachEnd: self = .didReachEnd
        case .didFail: self = .didFail
        case .deviceLost: self = .deviceLost
        case .deviceRestored: self = .deviceRestored
        }
    }
}

/// Expected results. Short names: "-" rejected, "=" accepted without change, otherwise the next state.
// swift-format-ignore: AlwaysUseLowerCamelCase
private let L = PlaybackState.loading(otherURL)
// swift-format-ignore: AlwaysUseLowerCamelCase
private let F = PlaybackState.failed(fatal)
private let seekP = PlaybackState.seeking(to: 30, previousState: .playing)
private let seekPa = PlaybackState.seeking(to: 30, previousState: .paused)

enum R: Equatable, CustomStringConvertible {
    case rejected, unchanged
    case to(PlaybackState)
}

private func expected(_ s: S, _ a: A) -> R {
    // Common to every state.
    switch a {
    case .load: return .to(L)
    case .stop: return s == .idle ? .unchanged : .to(.idle)
    case .didFail:
        switch s {
        case .idle, .failedRecoverable, .failedFatal: return .rejected
        default: return .to(F)
        }
    default: break
    }
    let table: [S: [A: R]] = [
        .idle: [:],
        .loading: [.didBecomeReady: .to(.ready)],
        .ready: [.play: .to(.playing), .seek: .to(seekPa)],
        .playing: [
            .play: .unchanged, .didFinishBuffering: .unchanged, .didAdvance: .unchanged,
            .pause: .to(.paused), .deviceLost: .to(.paused), .didStartBuffering: .to(.buffering(previousState: .playing)),
            .seek: .to(seekP), .didReachEnd: .to(.ended),
        ],
        .paused: [
            .play: .to(.playing), .deviceRestored: .to(.playing),
            .pause: .unchanged, .deviceLost: .unchanged, .didAdvance: .unchanged,
            .didStartBuffering: .to(.buffering(previousState: .paused)), .seek: .to(seekPa), .didReachEnd: .to(.ended),
        ],
        .bufferingPlaying: [
            .didFinishBuffering: .to(.playing), .play: .unchanged, .didStartBuffering: .unchanged, .didAdvance: .unchanged,
            .pause: .to(.buffering(previousState: .paused)),
            .deviceLost: .to(.buffering(previousState: .paused)), .seek: .to(seekP), .didReachEnd: .to(.ended),
        ],
        .bufferingPaused: [
            .didFinishBuffering: .to(.paused), .play: .to(.buffering(previousState: .playing)),
            .didStartBuffering: .unchanged, .pause: .unchanged, .didAdvance: .unchanged,
            .deviceLost: .unchanged, .seek: .to(seekPa), .didReachEnd: .to(.ended),
        ],
        .seekingPlaying: [
            .didFinishSeeking: .to(.playing), .play: .unchanged, .seek: .to(seekP),
            .pause: .to(.seeking(to: 10, previousState: .paused)),
            .deviceLost: .to(.seeking(to: 10, previousState: .paused)),
        ],
        .seekingPaused: [
            .didFinishSeeking: .to(.paused), .seek: .to(seekPa),
            .play: .to(.seeking(to: 10, previousState: .playing)),
            .pause: .unchanged, .deviceLost: .unchanged,
        ],
        .ended: [.play: .to(.playing), .seek: .to(seekPa), .didReachEnd: .unchanged],
        .failedRecoverable: [.retry: .to(.idle)],
        .failedFatal: [:],
    ]
    return table[s]?[a] ?? .rejected
}

private let allPairs: [(S, A)] = S.allCases.flatMap { s in A.allCases.map { (s, $0) } }

@Suite("Transition table: every state × every action", .timeLimit(.minutes(1)))
struct TransitionTableTests {
    @Test("every row kind stands for itself, and every pair is tested")
    func coverage() {
        // Each row kind maps to a value that maps back to it: no kind stands in for another, so
        // the pairs below are every state kind × every action kind.
        for s in S.allCases { #expect(S(s.state) == s, "\(s)") }
        for a in A.allCases { #expect(A(a.action) == a, "\(a)") }
        #expect(Set(S.allCases.map(\.state.name)).count == 9)
        #expect(allPairs.count == S.allCases.count * A.allCases.count)
        #expect(Set(allPairs.map { "\($0.0)×\($0.1)" }).count == allPairs.count)
    }

    @Test(arguments: allPairs)
    func transition(_ s: S, _ a: A) {
        let actual = PlaybackTransitionTable.nextState(for: a.action, from: s.state)
        let result: R = actual.map { $0 == s.state ? .unchanged : .to($0) } ?? .rejected
        #expect(result == expected(s, a), "\(s.rawValue) × \(a.rawValue)")
    }

    @Test(arguments: allPairs)
    func machineAgreesWithTable(_ s: S, _ a: A) {
        let machine = PlaybackStateMachine(initialState: s.state, now: { Date(timeIntervalSince1970: 42) })
        let canPerform = machine.canPerform(a.action)
        let transition = machine.send(a.action)
        #expect(canPerform == (transition != nil))
        if let transition {
            #expect(transition.from == s.state)
            #expect(transition.action == a.action)
            #expect(transition.timestamp == Date(timeIntervalSince1970: 42))
            #expect(machine.currentState == transition.to)
            #expect(transition.didChangeState == (transition.to != s.state))
        } else {
            #expect(machine.currentState == s.state, "a rejected action leaves the state unchanged")
        }
    }
}

extension R {
    var description: String {
        switch self {
        case .rejected: "rejected"
        case .unchanged: "unchanged"
        case .to(let state): "-> \(state)"
        }
    }
}
extension S: CustomTestStringConvertible { var testDescription: String { rawValue } }
extension A: CustomTestStringConvertible { var testDescription: String { rawValue } }
