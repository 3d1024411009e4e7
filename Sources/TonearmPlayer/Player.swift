import Foundation
import Logging
import Synchronization
import TonearmCore
import TonearmEngine
import TonearmSync

/// Everything `status` reports.
public struct PlayerStatus: Sendable {
    public var state: PlaybackState
    public var position: Double
    public var duration: Double?
    public var media: MediaInfo?
    public var output: OutputConfiguration
    public var interruption: String?
}

/// The coordinator: turns accepted user actions into engine calls, and waits for their outcome
/// through the state machine. Each user action and its engine call happen under one lock, so
/// commands from concurrent clients reach the state machine and the engine in the same order.
/// Engine calls never block, so the lock is held only briefly and never across an `await`.
public final class Player: Sendable {
    public let machine: PlaybackStateMachine
    public let engine: PlayerEngine
    public let performance: PerformanceObserver
    private let adapter: EngineStateAdapter
    private let commandLock = Locked<URL?>(nil)  // guards the command sequence; holds the last loaded URL
    private let seekTokens = Atomic<Int>(0)
    private let logger: Logger

    public init(engine: PlayerEngine, machine: PlaybackStateMachine = PlaybackStateMachine(), logger: Logger) {
        self.engine = engine
        self.machine = machine
        self.logger = logger
        adapter = EngineStateAdapter(engine: engine, machine: machine)
        performance = PerformanceObserver(engine: engine)
    }

    public var state: PlaybackState { machine.currentState }

    public var status: PlayerStatus {
        PlayerStatus(state: machine.currentState, position: engine.currentTime, duration: engine.duration,
                     media: engine.mediaInfo, output: engine.configuration,
                     interruption: machine.currentState == .paused ? adapter.interruptionReason : nil)
    }

    /// Loads `url`; returns once it is ready (or playing, with `play`) with the state that led
    /// to, or throws why not.
    public func load(_ url: URL, play: Bool = false, start: Double = 0) async throws(PlayerError) -> (media: MediaInfo, state: PlaybackState) {
        guard start.isFinite, start >= 0 else { throw .invalid("start must be a number of seconds ≥ 0") }
        commandLock.withLock { lastURL in
            machine.send(.load(url))
            lastURL = url
            engine.load(url: url, startAt: start)
        }
        logger.info("load", metadata: ["url": "\(url.path)"])
        let settled = await machine.firstState { $0 != .loading(url) }
        switch settled {
        case .ready?:
            break
        case .failed(let error)?:
            logger.warning("load failed", metadata: ["url": "\(url.path)", "error": "\(error)"])
            throw .failed(error)
        default:
            throw .superseded(by: machine.currentState)
        }
        guard let info = engine.mediaInfo else { throw .superseded(by: machine.currentState) }
        if play {
            do {
                return (info, try self.play().to)
            } catch .rejected(.failed(let error), _) {
                // It failed between ready and play (damage found early in the stream): that is the answer.
                throw .failed(error)
            }
        }
        return (info, .ready)
    }

    /// Returns the transition this command made; `didChangeState` is false when it was accepted
    /// but changed nothing (play while playing). Its `to` is the state this command led to, even
    /// if the engine has moved on since (a short file may already have ended).
    @discardableResult
    public func play() throws(PlayerError) -> PlaybackTransition {
        try perform(.play) { from in
            if from == .ended { engine.seek(to: 0) }
            engine.play()
        }
    }

    /// Reaches the engine even when already paused: a pause while the device is lost must keep
    /// the device's return from resuming playback.
    @discardableResult
    public func pause() throws(PlayerError) -> PlaybackTransition {
        try perform(.pause, evenUnchanged: true) { _ in engine.pause() }
    }

    @discardableResult
    public func stop() throws(PlayerError) -> PlaybackTransition {
        try perform(.stop) { _ in engine.stop() }
    }

    /// Seeks and returns the new position and the state the seek settled in, once the engine has landed there.
    public func seek(to position: Double, relative: Bool = false) async throws(PlayerError) -> (position: Double, state: PlaybackState) {
        guard position.isFinite else { throw .invalid("position must be a finite number of seconds") }
        var target = relative ? engine.currentTime + position : position
        guard target >= 0 || relative else { throw .invalid("position must be ≥ 0 seconds") }
        target = max(0, target)
        if let duration = engine.duration { target = min(target, duration) }
        let resolved = target
        _ = try perform(.seek(to: resolved)) { _ in
            let token = seekTokens.add(1, ordering: .relaxed).newValue
            adapter.expectSeek(token: token)
            engine.seek(to: resolved, token: token)
        }
        let settled = await machine.firstState { state in
            if case .seeking = state { return false }
            return true
        }
        if case .failed(let error)? = settled { throw .failed(error) }
        return (engine.currentTime, settled ?? machine.currentState)
    }

    /// Retries the media that failed (a recoverable failure only), as a new load.
    public func retry() async throws(PlayerError) -> (media: MediaInfo, state: PlaybackState) {
        let url: URL? = try commandLock.withLock { lastURL throws(PlayerError) in
            let from = machine.currentState
            guard machine.send(.retry) != nil else { throw .rejected(state: from, action: .retry) }
            return lastURL
        }
        guard let url else { throw .invalid("nothing to retry") }
        return try await load(url)
    }

    /// Sends a user action; when accepted and it changes the state, runs `engineCall` under the same lock.
    private func perform(_ action: PlaybackAction, evenUnchanged: Bool = false,
                         _ engineCall: (PlaybackState) -> Void) throws(PlayerError) -> PlaybackTransition {
        try commandLock.withLock { _ throws(PlayerError) in
            let from = machine.currentState
            guard let transition = machine.send(action) else { throw .rejected(state: from, action: action) }
            if transition.didChangeState || evenUnchanged { engineCall(from) }
            return transition
        }
    }

    public func transitions() -> AsyncStream<PlaybackTransition> { machine.transitions() }
    public func performanceEvents() -> AsyncStream<PerformanceEvent> { performance.events() }

    /// Stops playback and waits until the device is closed (shutdown).
    public func shutdown() async {
        _ = try? stop()
        await engine.waitUntilReleased()
    }
}
