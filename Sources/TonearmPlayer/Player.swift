import Foundation
import Logging
import TonearmCore
import TonearmEngine
import TonearmSync

/// Everything `status` reports.
public struct PlayerStatus: Sendable, Equatable {
    public var state: PlaybackState
    public var position: Double
    /// Seconds of decoded audio ahead of what is heard (a network source's buffer fill).
    public var buffered: Double
    public var duration: Double?
    public var media: MediaInfo?
    public var output: OutputConfiguration
    public var interruption: String?
    /// Queue item ids: the one being heard (or loaded), and the one that follows it.
    public var current: Int?
    public var next: Int?
    public var queueVersion: Int
    public var volume: Int
    public var replayGain: ReplayGainSettings
}

/// Why a new item starts being heard (the `item` event).
public enum ItemReason: String, Sendable {
    /// The previous item ended and this one joined it (gapless where the formats allow).
    case advance
    /// A user's command (load, play with an id, next, previous, …).
    case user
    /// Playback went on after an item failed or after the queue changed as an item ended.
    case end
}

/// News about the queue for clients (`queue` and `item` events).
public enum QueueEvent: Sendable, Equatable {
    case queue(version: Int)
    case item(id: Int, url: URL, reason: ItemReason)
    case itemFailed(id: Int, kind: PlaybackError.Kind, message: String)
    /// A stream's title changed, as it is heard (ICY StreamTitle).
    case metadata(id: Int, title: String, artist: String?)
}

/// News about the player's settings (MPD's `mixer` and `options` subsystems).
public enum SettingsEvent: Sendable, Equatable {
    case volume(Int)
    /// repeat, random, single, consume
    case queueOptions
    case replayGain
}

/// The player: owns the queue and the state machine, turns accepted commands into engine calls,
/// and turns engine events into actions (through `EngineEventAdapter`) and queue moves.
///
/// Concurrency: one lock (`model`, the player lock) guards the queue, the adapter's context and
/// the waiting commands. Every user command and every engine event is handled entirely inside
/// it, so the state machine sees commands and news in one order and news is always judged
/// against the context of the latest command. Engine calls never block, so the lock is held
/// only briefly and never across an `await`. Lock order: player lock, then the state machine's
/// and the engine's own locks (never the other way round).
public final class Player: Sendable {
    public let machine: PlaybackStateMachine
    public let engine: PlayerEngine
    public let performance: PerformanceObserver
    let model: Locked<Model>
    private let queueEvents = StreamFanout<QueueEvent>(bufferingPolicy: .bufferingNewest(1024))
    private let settingsEvents = StreamFanout<SettingsEvent>(bufferingPolicy: .bufferingNewest(64))
    let logger: Logger
    private let tokens = Locked<[ObservationToken]>([])
    /// Told of changes worth saving (the state keeper); set once at start. Held weakly: the
    /// keeper holds the player, and its owner (the daemon) keeps it.
    private let changeObserverBox = Locked<WeakChangeObserver>(WeakChangeObserver())
    /// Tags of queued files (titles for `queue`, albums for ReplayGain's `auto`).
    let tags = TagReader()

    /// What a waiting load or jump learns.
    enum LoadOutcome: Sendable {
        case ready(engineID: Int)
        case failed(PlaybackError)
        case superseded
        /// The command was not possible (answered before any engine call).
        case refused(PlayerError)
    }

    enum SeekOutcome: Sendable {
        /// Where the seek landed and the state it settled in, as they were at that moment.
        case landed(position: Double, state: PlaybackState)
        case failed(PlaybackError)
        case superseded
        case rejected(PlayerError)
    }

    struct Model {
        var queue = PlayQueue()
        var context = AdapterContext()
        var nextEngineID = 0
        var nextSeekToken = 0
        /// Engine item → queue item, for the items in play (the current one and the one after it).
        var queueIDs: [Int: Int] = [:]
        /// Media info of engine items in play, from their `opened` news.
        var media: [Int: MediaInfo] = [:]
        /// Why each engine item in play was opened, for its `item` event.
        var reasons: [Int: ItemReason] = [:]
        /// Engine items to start playing once ready (queue jumps made while playing).
        var playOnReady: Set<Int> = []
        var loadWaiters: [Int: CheckedContinuation<LoadOutcome, Never>] = [:]
        var seekWaiters: [(token: Int, continuation: CheckedContinuation<SeekOutcome, Never>)] = []
        /// The queue item named to the engine as next, and failures in a row (a queue of bad files ends).
        var pendingNextQueueID: Int?
        var failuresInRow = 0
        var interruption: String?
        var volume: Int
        var replayGain: ReplayGainSettings
        var randomSeed: UInt64 = 0x5EED
    }

    public init(engine: PlayerEngine, machine: PlaybackStateMachine = PlaybackStateMachine(), logger: Logger,
                volume: Int = 100, replayGain: ReplayGainSettings = ReplayGainSettings()) {
        self.engine = engine
        self.machine = machine
        self.logger = logger
        let level = min(max(volume, 0), 100)
        model = Locked(Model(volume: level, replayGain: replayGain))
        performance = PerformanceObserver(engine: engine)
        engine.setVolume(Self.factor(level))
        engine.setReplayGain(replayGain)
        let token = engine.observeEvents { [weak self] _, event in self?.handle(event) }
        tokens.withLock { $0 = [token] }
    }

    // MARK: Reading

    public var state: PlaybackState { machine.currentState }

    public var changeObserver: PlayerChangeObserver? {
        get { changeObserverBox.withLock { $0.observer } }
        set { changeObserverBox.withLock { $0.observer = newValue } }
    }

    /// A position as clients see it: never before the item's start (a decoder's first frame
    /// may sit before 0, as Opus's pre-skip does).
    static func shown(_ seconds: Double) -> Double { max(0, seconds) }

    public var status: PlayerStatus {
        model.withLock { m in
            let state = machine.currentState
            let current = m.context.currentItem
            var position = 0.0
            var buffered = 0.0
            var media: MediaInfo?
            if let current, state.isActive {
                let heard = engine.heardAndBuffered
                position = heard.itemID == current ? Self.shown(heard.seconds) : 0
                buffered = heard.buffered
                media = m.media[current]
            }
            return PlayerStatus(state: state, position: position, buffered: buffered, duration: media?.duration, media: media,
                                output: engine.configuration,
                                interruption: state == .paused ? m.interruption : nil,
                                current: m.queue.currentID, next: m.pendingNextQueueID ?? nextQueueID(m),
                                queueVersion: m.queue.version, volume: m.volume, replayGain: m.replayGain)
        }
    }

    public var queue: PlayQueue { model.withLock { $0.queue } }

    /// Whether `play` would start the queue (stopped, or after a failure a queue skips) rather
    /// than resume: then it waits for the item to open.
    public var playStartsQueue: Bool {
        model.withLock { m in
            guard m.queue.currentID ?? m.queue.first != nil else { return false }
            return machine.currentState == .idle
        }
    }

    /// The queue item that plays after the current one, by the queue's options.
    private func nextQueueID(_ m: Model) -> Int? {
        guard let current = m.queue.currentID else { return m.queue.first }
        return m.queue.next(after: current)
    }

    public func transitions() -> AsyncStream<PlaybackTransition> { machine.transitions() }
    public func performanceEvents() -> AsyncStream<PerformanceEvent> { performance.events() }
    public func queueEventStream() -> AsyncStream<QueueEvent> { queueEvents.subscribe() }
    public func settingsEventStream() -> AsyncStream<SettingsEvent> { settingsEvents.subscribe() }

    // MARK: Loading and jumping

    /// Replaces the queue with `url` and loads it; returns once it is ready (or playing, with
    /// `play`) with the state that led to, or throws why not.
    public func load(_ url: URL, play: Bool = false, start: Double = 0) async throws(PlayerError) -> (media: MediaInfo, state: PlaybackState) {
        guard start.isFinite, start >= 0 else { throw .invalid("start must be a number of seconds ≥ 0") }
        logger.info("load", metadata: ["url": "\(url.path)"])
        let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<LoadOutcome, Never>) in
            model.withLock { m in
                m.queue.clear()
                guard let added = try? m.queue.add([(url: url, title: nil)]), let item = added.first else {
                    continuation.resume(returning: .failed(PlaybackError(.internal, "cannot queue \(url)")))
                    return
                }
                publishQueue(m)
                tags.request([url])
                open(&m, queueID: item.id, start: start, skipsFailures: false, play: false, reason: .user,
                     waiter: continuation)
            }
        }
        return try await settle(outcome, url: url, play: play)
    }

    /// Plays queue item `id` (a jump, from `start` seconds), or with nil: resumes, or starts the
    /// queue when stopped. Returns the state this led to, once the item plays.
    public func play(id: Int?, start: Double = 0) async throws(PlayerError) -> (transition: PlaybackTransition?, media: MediaInfo?, state: PlaybackState) {
        enum Start { case done(PlaybackTransition), jump(Int), failure(PlayerError) }
        let step: Start = model.withLock { m in
            if let id {
                guard m.queue.item(id: id) != nil else { return .failure(.invalid("no queue item with id \(id)")) }
                return .jump(id)
            }
            let from = machine.currentState
            if case .idle = from, let first = m.queue.currentID ?? m.queue.first { return .jump(first) }
            do throws(PlayerError) { return .done(try playNow(&m)) } catch { return .failure(error) }
        }
        switch step {
        case .failure(let error): throw error
        case .done(let transition): return (transition, nil, transition.to)
        case .jump(let id):
            let loaded = try await jump(to: id, play: true, reason: .user, start: max(0, start))
            return (nil, loaded.media, loaded.state)
        }
    }

    /// Goes to the next queue item (`next`): playing goes on playing it; otherwise it is loaded,
    /// `ready`. At the end of the queue, stops.
    public func next() async throws(PlayerError) -> (media: MediaInfo?, state: PlaybackState) {
        let target: Int?? = model.withLock { m in
            guard let current = m.queue.currentID else { return .some(m.queue.first) }
            return .some(m.queue.userNext(after: current))
        }
        guard let id = target ?? nil else {
            _ = try stop()
            return (nil, machine.currentState)
        }
        return try await jump(to: id, play: nil, reason: .user)
    }

    /// Goes to the previous queue item; at the start of the queue, restarts the current one.
    public func previous() async throws(PlayerError) -> (media: MediaInfo?, state: PlaybackState) {
        let target: Int? = model.withLock { m in
            guard let current = m.queue.currentID else { return m.queue.first }
            return m.queue.previous(before: current) ?? current
        }
        guard let id = target else { throw .invalid("the queue is empty") }
        return try await jump(to: id, play: nil, reason: .user)
    }

    /// Opens queue item `id`; `play` nil keeps the current play state. A file that fails is
    /// skipped (an `item_failed` event) and the queue goes on.
    func jump(to id: Int, play: Bool?, reason: ItemReason, start: Double = 0) async throws(PlayerError) -> (media: MediaInfo?, state: PlaybackState) {
        let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<LoadOutcome, Never>) in
            model.withLock { m in
                let state = machine.currentState
                let playing = play ?? (state == .playing || state.isResumingPlaying)
                open(&m, queueID: id, start: start, skipsFailures: true, play: playing, reason: reason, waiter: continuation)
            }
        }
        switch outcome {
        case .ready(let engineID):
            let media = model.withLock { $0.media[engineID] }
            return (media, machine.currentState)
        case .failed(let error): throw .failed(error)
        case .superseded: throw .superseded(by: machine.currentState)
        case .refused(let error): throw error
        }
    }

    /// Turns a load's outcome into its answer (and plays, when asked).
    private func settle(_ outcome: LoadOutcome, url: URL, play: Bool) async throws(PlayerError) -> (media: MediaInfo, state: PlaybackState) {
        switch outcome {
        case .failed(let error):
            logger.warning("load failed", metadata: ["url": "\(url.path)", "error": "\(error)"])
            throw .failed(error)
        case .superseded:
            throw .superseded(by: machine.currentState)
        case .refused(let error):
            throw error
        case .ready(let engineID):
            let result: Result<(MediaInfo, PlaybackState), PlayerError> = model.withLock { m in
                guard let media = m.media[engineID], m.context.currentItem == engineID else {
                    return .failure(.superseded(by: machine.currentState))
                }
                guard play else { return .success((media, .ready)) }
                do throws(PlayerError) {
                    return .success((media, try playNow(&m).to))
                } catch .rejected(.failed(let error), _) {
                    // It failed between ready and play (damage found early in the stream): that is the answer.
                    return .failure(.failed(error))
                } catch {
                    return .failure(error)
                }
            }
            return try result.get()
        }
    }

    /// Opens queue item `queueID` as the current item (lock held). Earlier waiting commands are
    /// answered as superseded.
    private func open(_ m: inout Model, queueID: Int, start: Double, skipsFailures: Bool, play: Bool,
                      reason: ItemReason, waiter: CheckedContinuation<LoadOutcome, Never>?) {
        guard let item = m.queue.item(id: queueID) else {
            waiter?.resume(returning: .failed(PlaybackError(.invalidRequest, "no queue item with id \(queueID)")))
            return
        }
        supersedeWaiters(&m)
        m.nextEngineID += 1
        let engineID = m.nextEngineID
        m.context.currentItem = engineID
        m.context.pendingNext = nil
        m.context.expectedSeekToken = nil
        m.context.skipsFailures = skipsFailures
        m.pendingNextQueueID = nil
        m.queueIDs = [engineID: queueID]
        m.media = m.media.filter { $0.key == engineID }
        m.reasons = [engineID: reason]
        m.playOnReady = play ? [engineID] : []
        m.interruption = nil
        if let waiter { m.loadWaiters[engineID] = waiter }
        let before = m.queue.version
        try? m.queue.setCurrent(queueID)
        if m.queue.version != before { publishQueue(m) }
        machine.send(.load(item.url))
        engine.open(engineItem(engineID, item, m), startAt: start)
    }

    private func engineItem(_ engineID: Int, _ item: QueueItem, _ m: Model) -> EngineItem {
        EngineItem(id: engineID, url: item.url, prefersAlbumGain: sharesAlbumWithNeighbour(item, m.queue))
    }

    /// ReplayGain `auto`: an item takes its album gain when the item before or after it in play
    /// order has the same album tag (an album played through keeps its own dynamics).
    private func sharesAlbumWithNeighbour(_ item: QueueItem, _ queue: PlayQueue) -> Bool {
        guard let album = tags.tags(for: item.url)?.album, !album.isEmpty else { return false }
        let neighbours = [queue.previous(before: item.id), queue.next(after: item.id)]
        return neighbours.contains { id in
            guard let id, id != item.id, let other = queue.item(id: id) else { return false }
            return tags.tags(for: other.url)?.album == album
        }
    }

    public func tags(for url: URL) -> MediaTags? { tags.tags(for: url) }

    /// Answers every waiting load and seek: a newer command replaced them (lock held).
    private func supersedeWaiters(_ m: inout Model) {
        for waiter in m.loadWaiters.values { waiter.resume(returning: .superseded) }
        m.loadWaiters = [:]
        for waiter in m.seekWaiters { waiter.continuation.resume(returning: .superseded) }
        m.seekWaiters = []
    }

    // MARK: Play, pause, stop, seek

    /// Returns the transition this command made; `didChangeState` is false when it was accepted
    /// but changed nothing (play while playing). Its `to` is the state this command led to, even
    /// if the engine has moved on since (a short file may already have ended).
    @discardableResult
    public func play() throws(PlayerError) -> PlaybackTransition {
        try model.withLock { m throws(PlayerError) in try playNow(&m) }
    }

    private func playNow(_ m: inout Model) throws(PlayerError) -> PlaybackTransition {
        try perform(.play, &m) { from, m in
            if from == .ended {
                m.nextSeekToken += 1
                engine.seek(to: 0, token: -m.nextSeekToken, playing: true)
            }
            m.context.intent = engine.play()
        }
    }

    /// Reaches the engine even when already paused: a pause while the device is lost must keep
    /// the device's return from resuming playback.
    @discardableResult
    public func pause() throws(PlayerError) -> PlaybackTransition {
        try model.withLock { m throws(PlayerError) in
            try perform(.pause, &m, evenUnchanged: true) { _, m in m.context.intent = engine.pause() }
        }
    }

    @discardableResult
    public func stop() throws(PlayerError) -> PlaybackTransition {
        try model.withLock { m throws(PlayerError) in
            try perform(.stop, &m) { _, m in stopEngine(&m) }
        }
    }

    /// Lock held.
    private func stopEngine(_ m: inout Model) {
        supersedeWaiters(&m)
        m.context.currentItem = nil
        m.context.pendingNext = nil
        m.context.expectedSeekToken = nil
        m.pendingNextQueueID = nil
        m.playOnReady = []
        m.queueIDs = [:]
        m.interruption = nil
        engine.stop()
    }

    /// Seeks and returns the new position and the state the seek settled in, once the engine has landed there.
    public func seek(to position: Double, relative: Bool = false) async throws(PlayerError) -> (position: Double, state: PlaybackState) {
        guard position.isFinite else { throw .invalid("position must be a finite number of seconds") }
        let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<SeekOutcome, Never>) in
            model.withLock { m in
                let current = m.context.currentItem
                let heard = engine.heard
                var target = relative ? (heard.itemID == current ? heard.seconds : 0) + position : position
                // Every finite position clamps to [0, duration] (to the longest position there
                // is when the duration is unknown).
                target = min(max(0, target), SavedPlayerState.maximumPosition)
                if let current, let duration = m.media[current]?.duration { target = min(target, duration) }
                let from = machine.currentState
                if let current, m.media[current]?.isLive == true {
                    continuation.resume(returning: .rejected(.invalid("cannot seek in a live stream (state \(from.name))")))
                    return
                }
                guard let transition = machine.send(.seek(to: target)) else {
                    continuation.resume(returning: .rejected(.rejected(state: from, action: .seek(to: target))))
                    return
                }
                m.nextSeekToken += 1
                let token = m.nextSeekToken
                m.context.expectedSeekToken = token
                var playing = false
                if case .seeking(_, let previous) = transition.to { playing = previous == .playing }
                guard engine.seek(to: target, token: token, playing: playing) != nil else {
                    continuation.resume(returning: .superseded)
                    return
                }
                m.seekWaiters.append((token, continuation))
            }
        }
        switch outcome {
        case .landed(let position, let state): return (position, state)
        case .failed(let error): throw .failed(error)
        case .superseded: throw .superseded(by: machine.currentState)
        case .rejected(let error): throw error
        }
    }

    /// Retries the item that failed (a recoverable failure only), as a new load of it.
    public func retry() async throws(PlayerError) -> (media: MediaInfo, state: PlaybackState) {
        let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<LoadOutcome, Never>) in
            model.withLock { m in
                let from = machine.currentState
                guard let current = m.queue.currentID else {
                    continuation.resume(returning: .refused(.invalid("nothing to retry")))
                    return
                }
                guard machine.send(.retry) != nil else {
                    continuation.resume(returning: .refused(.rejected(state: from, action: .retry)))
                    return
                }
                open(&m, queueID: current, start: 0, skipsFailures: false, play: false, reason: .user, waiter: continuation)
            }
        }
        let url = queue.current?.url ?? URL(fileURLWithPath: "/")
        return try await settle(outcome, url: url, play: false)
    }

    /// Sends a user action (lock held); when accepted and it changes the state, runs `engineCall`.
    private func perform(_ action: PlaybackAction, _ m: inout Model, evenUnchanged: Bool = false,
                         _ engineCall: (PlaybackState, inout Model) -> Void) throws(PlayerError) -> PlaybackTransition {
        let from = machine.currentState
        guard let transition = machine.send(action) else { throw .rejected(state: from, action: action) }
        if transition.didChangeState || evenUnchanged { engineCall(from, &m) }
        return transition
    }

    // MARK: The queue

    /// Adds entries at `position` (nil: the end); with `play`, plays the first of them.
    public func add(_ entries: [(url: URL, title: String?)], at position: Int? = nil) throws(PlayerError) -> (items: [QueueItem], version: Int) {
        try model.withLock { m throws(PlayerError) in
            let added: [QueueItem]
            do throws(QueueError) { added = try m.queue.add(entries, at: position) } catch { throw PlayerError(error) }
            if !added.isEmpty {
                tags.request(added.map(\.url))
                publishQueue(m)
                refreshNext(&m)
            }
            return (added, m.queue.version)
        }
    }

    public func remove(ids: [Int]) throws(PlayerError) -> Int {
        try model.withLock { m throws(PlayerError) in
            let currentRemoved = m.queue.currentID.map(ids.contains) ?? false
            let position = m.queue.currentID.flatMap { m.queue.position(of: $0) }
            let before = m.queue.version
            do throws(QueueError) { try m.queue.remove(ids: ids) } catch { throw PlayerError(error) }
            if m.queue.version != before { publishQueue(m) }
            if currentRemoved, machine.currentState.isActive || isLoading {
                // The item being heard is gone: what now sits in its place plays, in the same play state.
                if let position, position < m.queue.items.count {
                    let state = machine.currentState
                    let playing = state == .playing || state.isResumingPlaying
                    open(&m, queueID: m.queue.items[position].id, start: 0, skipsFailures: true, play: playing,
                         reason: .user, waiter: nil)
                } else {
                    machine.send(.stop)
                    stopEngine(&m)
                }
            } else {
                refreshNext(&m)
            }
            return m.queue.version
        }
    }

    private var isLoading: Bool {
        if case .loading = machine.currentState { return true }
        return false
    }

    public func move(id: Int, to position: Int) throws(PlayerError) -> Int {
        try model.withLock { m throws(PlayerError) in
            let before = m.queue.version
            do throws(QueueError) { try m.queue.move(id: id, to: position) } catch { throw PlayerError(error) }
            if m.queue.version != before {
                publishQueue(m)
                refreshNext(&m)
            }
            return m.queue.version
        }
    }

    /// Empties the queue and stops.
    public func clear() -> Int {
        model.withLock { m in
            let before = m.queue.version
            m.queue.clear()
            if m.queue.version != before { publishQueue(m) }
            if machine.currentState != .idle {
                machine.send(.stop)
                stopEngine(&m)
            }
            return m.queue.version
        }
    }

    public func setOptions(_ change: (inout QueueOptions) -> Void) -> QueueOptions {
        model.withLock { m in
            var options = m.queue.options
            change(&options)
            let before = m.queue.version
            m.randomSeed &+= 0x9E37_79B9_7F4A_7C15
            m.queue.setOptions(options, randomSeed: m.randomSeed)
            if m.queue.version != before {
                publishQueue(m)
                settingsEvents.yield(.queueOptions)
                refreshNext(&m)
            }
            return m.queue.options
        }
    }

    /// Reorders the items at the positions in `range` (nil: all) at random, for good (MPD's
    /// `shuffle`); returns the queue's version.
    public func shuffle(_ range: Range<Int>? = nil) throws(PlayerError) -> Int {
        try model.withLock { m throws(PlayerError) in
            let before = m.queue.version
            m.randomSeed &+= 0x9E37_79B9_7F4A_7C15
            do throws(QueueError) { try m.queue.shuffle(range, seed: m.randomSeed) } catch { throw PlayerError(error) }
            if m.queue.version != before {
                publishQueue(m)
                refreshNext(&m)
            }
            return m.queue.version
        }
    }

    // MARK: Volume and ReplayGain

    /// Sets the software volume, 0…100 (or changes it by `delta`); returns the new level.
    public func setVolume(level: Int? = nil, delta: Int? = nil) -> Int {
        model.withLock { m in
            var newLevel = m.volume
            if let level { newLevel = level }
            if let delta { newLevel += delta }
            m.volume = min(max(newLevel, 0), 100)
            engine.setVolume(Self.factor(m.volume))
            changeObserver?.playerChanged()
            // News even when the level did not change, as MPD's mixer gives it.
            settingsEvents.yield(.volume(m.volume))
            return m.volume
        }
    }

    /// Volume level → gain factor: a cubic curve, so that equal steps sound like equal steps
    /// (as PulseAudio's software volume); 100 is exactly 1, which leaves samples untouched.
    static func factor(_ level: Int) -> Double {
        let fraction = Double(min(max(level, 0), 100)) / 100
        return fraction * fraction * fraction
    }

    public func setReplayGain(mode: ReplayGainMode? = nil, preampDB: Double? = nil) -> ReplayGainSettings {
        model.withLock { m in
            if let mode { m.replayGain.mode = mode }
            if let preampDB { m.replayGain.preampDB = preampDB }
            engine.setReplayGain(m.replayGain)
            changeObserver?.playerChanged()
            settingsEvents.yield(.replayGain)
            return m.replayGain
        }
    }

    // MARK: Engine news

    private func handle(_ event: EngineEvent) {
        model.withLock { m in
            let previous = m.context.currentItem
            let actions = EngineEventAdapter.actions(for: event, context: &m.context)
            for action in actions { machine.send(action) }
            switch event {
            case .opened(let id, let info):
                if m.queueIDs[id] != nil { m.media[id] = info }
            case .ready(let id):
                guard id == m.context.currentItem else { return }
                m.failuresInRow = 0
                announceItem(id, m)
                if m.playOnReady.remove(id) != nil { _ = try? playNow(&m) }
                m.loadWaiters.removeValue(forKey: id)?.resume(returning: .ready(engineID: id))
                refreshNext(&m)
            case .started(let id):
                guard actions.contains(.didAdvance) else { return }
                advance(from: previous, to: id, &m)
            case .failed(let id, let failure):
                itemFailed(id, PlaybackError(failure), &m)
            case .didPlayToEnd(let id):
                guard id == m.context.currentItem, let current = m.queueIDs[id] else { return }
                // Nothing followed in the engine; if the queue has a next item now (it changed as
                // the item ended), it plays.
                let next = m.queue.next(after: current)
                endOneshot(&m)
                if next != current, m.queue.finish(current) { publishQueue(m) }
                if let next {
                    open(&m, queueID: next, start: 0, skipsFailures: true, play: true, reason: .end, waiter: nil)
                }
            case .seekCompleted(let id, let token, let position):
                guard id == m.context.currentItem, token > 0 else { return }
                let done = m.seekWaiters.filter { $0.token <= token }
                m.seekWaiters.removeAll { $0.token <= token }
                let landed = SeekOutcome.landed(position: Self.shown(position), state: machine.currentState)
                for waiter in done { waiter.continuation.resume(returning: landed) }
            case .deviceLost(_, let failure, _):
                if actions.contains(.deviceLost) { m.interruption = failure.message }
            case .deviceRestored(let id, _, _):
                if id == m.context.currentItem { m.interruption = nil }
            case .bufferingEnded(let id, _):
                if id == m.context.currentItem, actions.isEmpty == false { m.interruption = nil }
            case .streamTitle(let id, let title):
                m.media[id]?.title = title.title
                m.media[id]?.artist = title.artist
                if let queueID = m.queueIDs[id] {
                    queueEvents.yield(.metadata(id: queueID, title: title.title, artist: title.artist))
                }
            case .loadStarted, .bufferingStarted, .firstAudioWritten, .underrun, .reconnecting:
                break
            }
        }
    }

    /// The engine joined `id` to the previous item: the queue moves on (lock held).
    private func advance(from previous: Int?, to id: Int, _ m: inout Model) {
        m.failuresInRow = 0
        guard let queueID = m.queueIDs[id] else { return }
        let before = m.queue.version
        let finished = previous.flatMap { m.queueIDs[$0] }
        guard m.queue.item(id: queueID) != nil else {
            // It was removed from the queue as it was joined: play what follows now instead.
            if let finished, let next = m.queue.next(after: finished) {
                open(&m, queueID: next, start: 0, skipsFailures: true, play: true, reason: .end, waiter: nil)
            } else {
                machine.send(.stop)
                stopEngine(&m)
            }
            return
        }
        try? m.queue.advance(from: finished, to: queueID)
        endOneshot(&m)
        m.queueIDs = m.queueIDs.filter { $0.key == id }
        m.media = m.media.filter { $0.key == id }
        m.pendingNextQueueID = nil
        m.reasons[id] = .advance
        if m.queue.version != before { publishQueue(m) }
        announceItem(id, m)
        refreshNext(&m)
    }

    /// `single` in its oneshot form lasts until the item it was set for has ended (lock held).
    private func endOneshot(_ m: inout Model) {
        guard m.queue.options.single, m.queue.options.oneshot else { return }
        var options = m.queue.options
        options.single = false
        options.oneshot = false
        m.queue.setOptions(options, randomSeed: m.randomSeed)
        settingsEvents.yield(.queueOptions)
        changeObserver?.playerChanged()
    }

    /// An engine item failed: the current one (a load's answer, or a queue skip) or the one
    /// named to follow it (skipped before it is heard). Lock held.
    private func itemFailed(_ id: Int, _ error: PlaybackError, _ m: inout Model) {
        if id == m.context.currentItem {
            if let queueID = m.queueIDs[id] { queueEvents.yield(.itemFailed(id: queueID, kind: error.kind, message: error.message)) }
            logger.warning("item failed", metadata: ["error": "\(error)"])
            guard m.context.skipsFailures, !error.isDeviceFailure else {
                m.loadWaiters.removeValue(forKey: id)?.resume(returning: .failed(error))
                for waiter in m.seekWaiters { waiter.continuation.resume(returning: .failed(error)) }
                m.seekWaiters = []
                m.context.pendingNext = nil
                m.pendingNextQueueID = nil
                engine.stop()
                return
            }
            // A queue skips what cannot play, and ends cleanly when nothing in it can.
            m.failuresInRow += 1
            let waiter = m.loadWaiters.removeValue(forKey: id)
            // Failed on the way to playing, or while playing (a dropped stream, damage mid-file):
            // the queue plays on.
            let state = machine.currentState
            let playing = m.playOnReady.contains(id) || state == .playing || state.isResumingPlaying
            if let failed = m.queueIDs[id], m.failuresInRow < m.queue.items.count,
               let next = m.queue.userNext(after: failed) {
                open(&m, queueID: next, start: 0, skipsFailures: true, play: playing, reason: .end, waiter: waiter)
            } else {
                // Stopped first, then answered: the answer's reader sees the state it led to.
                m.failuresInRow = 0
                machine.send(.stop)
                stopEngine(&m)
                waiter?.resume(returning: .failed(error))
            }
        } else if id == m.context.pendingNext, let failed = m.queueIDs[id] {
            queueEvents.yield(.itemFailed(id: failed, kind: error.kind, message: error.message))
            m.failuresInRow += 1
            m.context.pendingNext = nil
            m.pendingNextQueueID = nil
            refreshNext(&m, after: failed)
        }
    }

    /// Names to the engine the item to join after the current one, when it changed (lock held).
    /// `after` skips from a queue item that failed before it was heard.
    private func refreshNext(_ m: inout Model, after skipped: Int? = nil) {
        guard let current = m.context.currentItem, let currentQueueID = m.queueIDs[current] else { return }
        switch machine.currentState {
        case .idle, .loading, .failed: return
        default: break
        }
        var wanted = m.queue.next(after: skipped ?? currentQueueID)
        if wanted != nil, m.failuresInRow >= max(m.queue.items.count, 1) { wanted = nil }
        if wanted == m.pendingNextQueueID, skipped == nil, m.context.pendingNext != nil || wanted == nil { return }
        if let wanted, let item = m.queue.item(id: wanted) {
            m.nextEngineID += 1
            let engineID = m.nextEngineID
            guard engine.setNext(engineItem(engineID, item, m), after: current) else { return }
            if let old = m.context.pendingNext { m.queueIDs.removeValue(forKey: old) }
            m.queueIDs[engineID] = wanted
            m.reasons[engineID] = .advance
            m.context.pendingNext = engineID
            m.pendingNextQueueID = wanted
        } else {
            guard engine.setNext(nil, after: current) else { return }
            if let old = m.context.pendingNext { m.queueIDs.removeValue(forKey: old) }
            m.context.pendingNext = nil
            m.pendingNextQueueID = nil
        }
    }

    private func announceItem(_ engineID: Int, _ m: Model) {
        guard let queueID = m.queueIDs[engineID], let item = m.queue.item(id: queueID) else { return }
        queueEvents.yield(.item(id: queueID, url: item.url, reason: m.reasons[engineID] ?? .user))
    }

    func publishQueue(_ m: Model) {
        queueEvents.yield(.queue(version: m.queue.version))
        changeObserver?.playerChanged()
    }

    /// Stops playback and waits until the device is closed (shutdown).
    public func shutdown() async {
        // The state as it stands is the one to keep, not the stop that follows.
        await changeObserver?.playerWillShutDown()
        _ = try? stop()
        tags.shutdown()
        engine.shutdown()
        await engine.waitUntilReleased()
    }
}

extension PlaybackState {
    /// Seeking or buffering on the way back to playing.
    var isResumingPlaying: Bool {
        switch self {
        case .seeking(_, .playing), .buffering(.playing): true
        default: false
        }
    }
}

extension PlayerError {
    init(_ error: QueueError) {
        switch error {
        case .unknownID(let id): self = .invalid("no queue item with id \(id)")
        case .positionOutOfRange(let position, let count):
            self = .invalid("position \(position) is out of range (the queue has \(count) items)")
        }
    }
}
