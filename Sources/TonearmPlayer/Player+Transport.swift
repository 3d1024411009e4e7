import Foundation
import Logging
import TonearmCore
import TonearmEngine
import TonearmMedia
import TonearmSync

/// Loading, jumping through the queue, play, pause, stop, seek and retry: the user's commands
/// that move playback. Each runs inside the player lock (see `Player`).
extension Player {
    // MARK: Loading and jumping

    /// Replaces the queue with `url` and loads it; returns once it is ready (or playing, with
    /// `play`) with the state that led to, or throws why not.
    package func load(_ url: URL, play: Bool = false, start: Double = 0) async throws(PlayerError) -> (
        media: MediaInfo, state: PlaybackState
    ) {
        await endCastForLocalCommand()
        return try await loadAlone(url, play: play, start: start)
    }

    /// `load`, whoever holds the room (a cast's URI is loaded this way: with `castGeneration`,
    /// only while that cast's hold stands, the queue set aside).
    func loadAlone(_ url: URL, play: Bool = false, start: Double = 0, castGeneration: Int? = nil) async throws(PlayerError) -> (
        media: MediaInfo, state: PlaybackState
    ) {
        guard start.isFinite, start >= 0 else { throw .invalid("start must be a number of seconds ≥ 0") }
        logger.info("load", metadata: ["url": "\(url.path)"])
        let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<LoadOutcome, Never>) in
            model.withLock { m in
                if let castGeneration, m.cast?.generation != castGeneration || m.cast?.aside == nil {
                    continuation.resume(returning: .refused(.superseded(by: machine.currentState)))
                    return
                }
                _ = try? edit(&m, .clear)
                guard let added = try? edit(&m, .add(entries: [QueueEdit.Entry(url: url, title: nil)], at: nil)),
                    let item = added.first
                else {
                    continuation.resume(returning: .failed(PlaybackError(.internal, "cannot queue \(url)")))
                    return
                }
                publishQueue(m)
                tags.request([url])
                open(&m, queueID: item.id, start: start, cause: .load(play: play), waiter: continuation)
            }
        }
        return try await settle(outcome, url: url, play: play)
    }

    /// Plays queue item `id` (a jump, from `start` seconds), or with nil: resumes, or starts the
    /// queue when stopped. Returns the state this led to, once the item plays.
    package func play(id: Int?, start: Double = 0) async throws(PlayerError) -> (
        transition: PlaybackTransition?, media: MediaInfo?, state: PlaybackState
    ) {
        await endCastForLocalCommand()
        return try await startPlaying(id: id, start: start)
    }

    /// `play`, whoever holds the room (a cast's Play is this).
    func startPlaying(id: Int?, start: Double = 0) async throws(PlayerError) -> (
        transition: PlaybackTransition?, media: MediaInfo?, state: PlaybackState
    ) {
        enum Start {
            case done(PlaybackTransition)
            case jump(Int)
            case failure(PlayerError)
        }
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
            let loaded = try await jump(to: id, play: true, start: max(0, start))
            return (nil, loaded.media, loaded.state)
        }
    }

    /// Goes to the next queue item (`next`): playing goes on playing it; otherwise it is loaded,
    /// `ready`. At the end of the queue, stops.
    package func next() async throws(PlayerError) -> (media: MediaInfo?, state: PlaybackState) {
        await endCastForLocalCommand()
        return try await skipForward()
    }

    /// `next`, whoever holds the room (a cast's Next is this).
    func skipForward() async throws(PlayerError) -> (media: MediaInfo?, state: PlaybackState) {
        let target: Int?? = model.withLock { m in
            guard let current = jumpOrigin(m) else { return .some(m.queue.first) }
            return .some(m.queue.userNext(after: current))
        }
        guard let id = target ?? nil else {
            _ = try stop()
            return (nil, machine.currentState)
        }
        return try await jump(to: id, play: nil)
    }

    /// Goes to the previous queue item; at the start of the queue, restarts the current one.
    package func previous() async throws(PlayerError) -> (media: MediaInfo?, state: PlaybackState) {
        await endCastForLocalCommand()
        let target: Int? = model.withLock { m in
            guard let current = jumpOrigin(m) else { return m.queue.first }
            return m.queue.previous(before: current) ?? current
        }
        guard let id = target else { throw .invalid("the queue is empty") }
        return try await jump(to: id, play: nil)
    }

    /// Opens queue item `id`; `play` nil keeps the current play state. A file that fails is
    /// skipped (an `item_failed` event) and the queue goes on.
    func jump(to id: Int, play: Bool?, start: Double = 0) async throws(PlayerError) -> (media: MediaInfo?, state: PlaybackState) {
        guard await fadeOutBeforeJump(to: id) else { throw .superseded(by: machine.currentState) }
        let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<LoadOutcome, Never>) in
            model.withLock { m in
                let state = machine.currentState
                let playing = play ?? (state == .playing || state.isResumingPlaying)
                open(&m, queueID: id, start: start, cause: .jump(play: playing), waiter: continuation)
            }
        }
        switch outcome {
        case .ready(let engineID, let state):
            let media = model.withLock { $0.inPlay[engineID]?.media }
            return (media, state)
        case .failed(let error): throw .failed(error)
        case .superseded: throw .superseded(by: machine.currentState)
        case .refused(let error): throw error
        }
    }

    /// Turns a load's outcome into its answer (and plays, when asked).
    func settle(_ outcome: LoadOutcome, url: URL, play: Bool) async throws(PlayerError) -> (media: MediaInfo, state: PlaybackState) {
        switch outcome {
        case .failed(let error):
            logger.warning("load failed", metadata: ["url": "\(url.path)", "error": "\(error)"])
            throw .failed(error)
        case .superseded:
            throw .superseded(by: machine.currentState)
        case .refused(let error):
            throw error
        case .ready(let engineID, let state):
            let result: Result<(MediaInfo, PlaybackState), PlayerError> = model.withLock { m in
                guard let media = m.inPlay[engineID]?.media, m.context.currentItem == engineID else {
                    return .failure(.superseded(by: machine.currentState))
                }
                guard play else { return .success((media, .ready)) }
                // Played on its `ready` news (`playsOnReady`), in order with what the engine said
                // after; an item that failed early in the stream since answers so.
                if case .failed(let error) = machine.currentState { return .failure(.failed(error)) }
                return .success((media, state))
            }
            return try result.get()
        }
    }

    /// Opens queue item `queueID` as the current item (lock held). Earlier waiting commands are
    /// answered as superseded.
    func open(
        _ m: inout Model, queueID: Int, start: Double = 0, cause: OpenCause,
        waiter: CheckedContinuation<LoadOutcome, Never>? = nil
    ) {
        guard let item = m.queue.item(id: queueID) else {
            waiter?.resume(returning: .failed(PlaybackError(.invalidRequest, "no queue item with id \(queueID)")))
            return
        }
        interruptAnnouncement(&m, playing: nil)
        supersedeWaiters(&m)
        m.nextEngineID += 1
        let engineID = m.nextEngineID
        m.context.currentItem = engineID
        m.context.pendingNext = nil
        m.context.expectedSeekToken = nil
        m.context.skipsFailures = cause.skipsFailures
        m.pendingNextQueueID = nil
        m.inPlay = [engineID: InPlay(queueID: queueID, reason: cause.reason, playsOnReady: cause.play, loadWaiter: waiter)]
        m.interruption = nil
        let before = m.queue.version
        _ = try? edit(&m, .setCurrent(id: queueID))
        if m.queue.version != before { publishQueue(m) }
        machine.send(.load(item.url))
        m.context.intent = engine.open(engineItem(engineID, item, m, opensAt: start), startAt: start, playing: cause.play)
    }

    /// The engine item for a queue item, with its loudness if it is known. If not, and a mode
    /// that levels by loudness is on, a local file is measured on the way by the decoder (when
    /// it is decoded from its start): one opened now (`opensAt`) is left to that; one named next
    /// is also measured ahead first of all, so that it is known before it starts. Otherwise the
    /// measuring thread measures it first of all (its cost stays off the real-time threads).
    /// Under a mode that does not level by loudness, nothing is measured.
    func engineItem(_ engineID: Int, _ item: QueueItem, _ m: Model, opensAt start: Double? = nil) -> EngineItem {
        let measured = loudness.known(item.url)
        let usesLoudness = m.replayGain.mode.usesLoudness
        let onTheWay = measured == nil && usesLoudness && item.url.isFileURL && (start ?? 0) == 0
        if measured == nil && usesLoudness {
            if onTheWay && start != nil { loudness.deferMeasuring(item.url) } else { loudness.request([item.url], first: true) }
        }
        return EngineItem(
            id: engineID, url: item.url, prefersAlbumGain: sharesAlbumWithNeighbour(item, m.queue),
            loudness: measured, measuresOnTheWay: onTheWay,
            measuresOpening: measured == nil && usesLoudness && item.url.isFileURL)
    }

    /// Under a mode that levels by loudness, the items it needs soon are measured ahead, first of
    /// all: the current item (or the first to play) and the one after it. The rest of the queue
    /// is measured as each becomes the next (`engineItem`): adding 10,000 songs measures two.
    /// Lock held.
    func measureAhead(_ m: Model) {
        guard m.replayGain.mode.usesLoudness, let current = m.queue.currentID ?? m.queue.first else { return }
        let next = m.pendingNextQueueID ?? m.queue.next(after: current)
        let urls = [current, next].compactMap { id in id.flatMap { m.queue.item(id: $0)?.url } }
        loudness.request(urls, first: true)
    }

    /// A file's loudness was measured: an item of it that is in play and not heard yet is
    /// leveled with it (the engine leaves one already heard as it started).
    func loudnessMeasured(_ url: URL, _ measurement: LoudnessMeasurement) {
        model.withLock { m in
            for (engineID, inPlay) in m.inPlay where m.queue.item(id: inPlay.queueID)?.url == url {
                engine.setLoudness(measurement, for: engineID)
            }
        }
    }

    /// ReplayGain `auto`: an item takes its album gain when the item before or after it in play
    /// order has the same album tag (an album played through keeps its own dynamics).
    func sharesAlbumWithNeighbour(_ item: QueueItem, _ queue: PlayQueue) -> Bool {
        guard let album = tags.tags(for: item.url)?.album, !album.isEmpty else { return false }
        let neighbours = [queue.previous(before: item.id), queue.next(after: item.id)]
        return neighbours.contains { id in
            guard let id, id != item.id, let other = queue.item(id: id) else { return false }
            return tags.tags(for: other.url)?.album == album
        }
    }

    /// With a crossfade set, whether `item` still joins the item before it gaplessly: both are
    /// tracks of one album (the same album tag) and `crossfade.skip_same_album` is on. nil: not
    /// known yet, a file's tags are still being read (`tagsRead` says it again).
    func keepsAlbumGapless(_ item: QueueItem, after previousID: Int, _ m: Model) -> Bool? {
        guard crossfadeSettings.skipSameAlbum, let previous = m.queue.item(id: previousID), previous.id != item.id else { return false }
        let reading = { (url: URL) in url.isFileURL ? self.tags.tags(for: url) : MediaTags() }
        guard let itemTags = reading(item.url), let previousTags = reading(previous.url) else { return nil }
        guard let album = itemTags.album, !album.isEmpty else { return false }
        return previousTags.album == album
    }

    package func tags(for url: URL) -> MediaTags? { tags.tags(for: url) }

    /// A queued file's duration: as its tags say; until they are read again after a restart,
    /// as the state file kept it.
    package func duration(of url: URL) -> Double? { tags.duration(for: url) }

    /// Tags read after the next item was named (an album added and played at once): whether it
    /// joins gaplessly and how long it is are said to the engine again, before its border.
    func tagsRead(_ url: URL) {
        model.withLock { m in
            guard let current = m.context.currentItem, let currentQueueID = m.inPlay[current]?.queueID,
                let nextQueueID = m.pendingNextQueueID, let next = m.queue.item(id: nextQueueID),
                url == next.url || url == m.queue.item(id: currentQueueID)?.url
            else { return }
            engine.updateNext(
                after: current, joinsGaplessly: keepsAlbumGapless(next, after: currentQueueID, m),
                durationHint: tags.tags(for: next.url)?.duration)
        }
    }

    /// Answers every waiting load and seek: a newer command replaced them (lock held).
    func supersedeWaiters(_ m: inout Model) {
        endManualFade(&m)
        for id in m.inPlay.keys { takeLoadWaiter(id, &m)?.resume(returning: .superseded) }
        for waiter in m.seekWaiters { waiter.continuation.resume(returning: .superseded) }
        m.seekWaiters = []
    }

    // MARK: Play, pause, stop, seek

    /// Returns the transition this command made; `didChangeState` is false when it was accepted
    /// but changed nothing (play while playing). Its `to` is the state this command led to, even
    /// if the engine has moved on since (a short file may already have ended).
    @discardableResult
    package func play() throws(PlayerError) -> PlaybackTransition {
        try model.withLock { m throws(PlayerError) in try playNow(&m) }
    }

    func playNow(_ m: inout Model) throws(PlayerError) -> PlaybackTransition {
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
    package func pause() throws(PlayerError) -> PlaybackTransition {
        try model.withLock { m throws(PlayerError) in
            try perform(.pause, &m, evenUnchanged: true) { _, m in m.context.intent = engine.pause() }
        }
    }

    /// `pause`, answered once it is heard: with `output.fade_on_pause` the sound fades out after
    /// what the device holds, and the position runs on until then. Once this returns, the
    /// position stays (until a play).
    package func pauseWhenHeard() async throws(PlayerError) -> PlaybackTransition {
        let transition = try pause()
        await engine.pauseTakesEffect()
        return transition
    }

    @discardableResult
    package func stop() throws(PlayerError) -> PlaybackTransition {
        try model.withLock { m throws(PlayerError) in
            try perform(.stop, &m) { _, m in stopEngine(&m) }
        }
    }

    /// Lock held.
    func stopEngine(_ m: inout Model) {
        interruptAnnouncement(&m, playing: nil)
        supersedeWaiters(&m)
        m.context.currentItem = nil
        m.context.pendingNext = nil
        m.context.expectedSeekToken = nil
        m.pendingNextQueueID = nil
        m.inPlay = [:]
        m.interruption = nil
        engine.stop()
    }

    /// Seeks and returns the new position and the state the seek settled in, once the engine has landed there.
    package func seek(to position: Double, relative: Bool = false) async throws(PlayerError) -> (position: Double, state: PlaybackState) {
        guard position.isFinite else { throw .invalid("position must be a finite number of seconds") }
        let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<SeekOutcome, Never>) in
            model.withLock { m in
                // During an announcement, the item comes back at the seek's target: the seek is
                // the reopening, and has landed once it is asked.
                endManualFade(&m)
                if let landed = seekEndsAnnouncement(to: position, relative: relative, &m) {
                    continuation.resume(returning: landed)
                    return
                }
                let current = m.context.currentItem
                let heard = engine.heard
                var target = relative ? (heard.itemID == current ? heard.seconds : 0) + position : position
                // Every finite position clamps to [0, duration] (to the longest position there
                // is when the duration is unknown).
                target = min(max(0, target), SavedPlayerState.maximumPosition)
                if let current, let duration = m.inPlay[current]?.media?.duration { target = min(target, duration) }
                let from = machine.currentState
                if let current, m.inPlay[current]?.media?.isLive == true {
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
    package func retry() async throws(PlayerError) -> (media: MediaInfo, state: PlaybackState) {
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
                open(&m, queueID: current, cause: .retry, waiter: continuation)
            }
        }
        let url = queue.current?.url ?? URL(fileURLWithPath: "/")
        return try await settle(outcome, url: url, play: false)
    }

    /// Sends a user action (lock held); when accepted and it changes the state, runs `engineCall`.
    func perform(
        _ action: PlaybackAction, _ m: inout Model, evenUnchanged: Bool = false,
        _ engineCall: (PlaybackState, inout Model) -> Void
    ) throws(PlayerError) -> PlaybackTransition {
        endManualFade(&m)
        // A pause over a ducked clip fades out at the lowered level; the level is whole again
        // from the resume (the output holds a level asked during a pause until then).
        let liftsDuckOncePaused = action == .pause && m.announcements.ducks
        defer { if liftsDuckOncePaused { engine.duck(to: 1, over: 0) } }
        switch action {
        case .play: interruptAnnouncement(&m, playing: true)
        case .pause: interruptAnnouncement(&m, playing: false)
        case .stop: interruptAnnouncement(&m, playing: nil)
        default: break
        }
        let from = machine.currentState
        guard let transition = machine.send(action) else { throw .rejected(state: from, action: action) }
        if transition.didChangeState || evenUnchanged { engineCall(from, &m) }
        return transition
    }
}
