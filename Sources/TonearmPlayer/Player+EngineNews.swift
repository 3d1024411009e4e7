import Foundation
import Logging
import TonearmCore
import TonearmEngine
import TonearmSync

/// The engine's news, on its delivery thread (`tonearm-events`): the adapter turns each event
/// into the state machine's actions, and the queue, the waiters and the next item follow.
extension Player {
    // MARK: Engine news

    func handle(_ event: EngineEvent) {
        model.withLock { m in
            let previous = m.context.currentItem
            let actions = EngineEventAdapter.actions(for: event, context: &m.context)
            for action in actions { machine.send(action) }
            defer {
                // Once the news is dealt with (an ended item may have opened the next): music that
                // stopped under a ducked announcement carries the clip no further.
                if m.announcements.ducks, machine.currentState.hasNothingToDuck {
                    logger.info("announcement cut: nothing plays under it any more")
                    interruptAnnouncement(&m, playing: nil)
                }
            }
            if let clip = m.announcementEngineID, event.itemID == clip {
                // An announcement's news: never the machine's (the adapter saw another item).
                clipNews(event, &m)
                return
            }
            switch event {
            case .opened(let id, let info):
                m.inPlay[id]?.media = info
            case .ready(let id):
                if m.comingBack?.engineID == id { m.comingBack = nil }
                guard id == m.context.currentItem else { return }
                m.failuresInRow = 0
                announceItem(id, m)
                if m.inPlay[id]?.playsOnReady == true {
                    m.inPlay[id]?.playsOnReady = false
                    // The engine was opened playing: only the state machine follows. Asking the
                    // engine again would be a second play, one that revives a device it already
                    // found lost since and announces the same loss twice.
                    _ = try? perform(.play, &m) { _, _ in }
                }
                takeLoadWaiter(id, &m)?.resume(returning: .ready(engineID: id, state: machine.currentState))
                refreshNext(&m)
            case .started(let id):
                guard actions.contains(.didAdvance) else { return }
                advance(from: previous, to: id, &m)
            case .failed(let id, let failure):
                itemFailed(id, PlaybackError(failure), &m)
            case .didPlayToEnd(let id):
                guard id == m.context.currentItem, let current = m.inPlay[id]?.queueID else { return }
                // Nothing followed in the engine; if the queue has a next item now (it changed as
                // the item ended), it plays.
                let next = m.queue.next(after: current)
                let sleeps = sleepsAfter(current, m)
                if sleeps {
                    m.sleep = nil
                    logger.info("sleep timer: paused where the item ended")
                }
                endOneshot(&m)
                if next != current {
                    let before = m.queue.version
                    _ = try? edit(&m, .finish(id: current))
                    if m.queue.version != before { publishQueue(m) }
                }
                if let next {
                    open(&m, queueID: next, cause: .goesOn(play: !sleeps))
                }
            case .seekCompleted(let id, let token, let position):
                guard id == m.context.currentItem, token > 0 else { return }
                let done = m.seekWaiters.filter { $0.token <= token }
                m.seekWaiters.removeAll { $0.token <= token }
                let landed = SeekOutcome.landed(
                    position: Self.shown(position, duration: m.inPlay[id]?.media?.duration),
                    state: machine.currentState)
                for waiter in done { waiter.continuation.resume(returning: landed) }
            case .deviceLost(_, let failure, _):
                if actions.contains(.deviceLost) { m.interruption = failure.message }
            case .deviceRestored(let id, _, _):
                if id == m.context.currentItem { m.interruption = nil }
            case .bufferingEnded(let id, _):
                if id == m.context.currentItem, actions.isEmpty == false { m.interruption = nil }
            case .streamTitle(let id, let title):
                m.inPlay[id]?.media?.title = title.title
                m.inPlay[id]?.media?.artist = title.artist
                if let queueID = m.inPlay[id]?.queueID {
                    queueEvents.yield(.metadata(id: queueID, title: title.title, artist: title.artist))
                }
            case .loudnessMeasured(_, let url, let measurement):
                // Kept as a measurement ahead would be; given up, it is measured ahead after all.
                if let measurement { loudness.record(measurement, for: url) } else { loudness.resume(url) }
            case .deviceReleased:
                logger.info("output device released: nothing played for output.release_after_s")
            case .outputHookRan(_, let run):
                if run.succeeded { logger.info("\(run.summary)") } else { logger.warning("\(run.summary)") }
            case .loadStarted, .bufferingStarted, .firstAudioWritten, .underrun, .reconnecting, .timeControlChanged:
                break
            }
        }
    }

    /// The engine joined `id` to the previous item: the queue moves on (lock held).
    func advance(from previous: Int?, to id: Int, _ m: inout Model) {
        m.failuresInRow = 0
        guard let queueID = m.inPlay[id]?.queueID else { return }
        let before = m.queue.version
        let finished = previous.flatMap { m.inPlay[$0]?.queueID }
        guard m.queue.item(id: queueID) != nil else {
            // It was removed from the queue as it was joined: play what follows now instead.
            if let finished, let next = m.queue.next(after: finished) {
                open(&m, queueID: next, cause: .goesOn(play: true))
            } else {
                machine.send(.stop)
                stopEngine(&m)
            }
            return
        }
        _ = try? edit(&m, .advance(from: finished, to: queueID))
        endOneshot(&m)
        for left in m.inPlay.keys where left != id { takeLoadWaiter(left, &m)?.resume(returning: .superseded) }
        m.inPlay = m.inPlay.filter { $0.key == id }
        m.inPlay[id]?.reason = .advance
        m.pendingNextQueueID = nil
        if m.queue.version != before { publishQueue(m) }
        announceItem(id, m)
        refreshNext(&m)
        // Where playback stands changed though the state did not (playing stays playing, so no
        // transition is published): the snapshot takes the new item and its position now.
        changeObserver?.playerChanged()
    }

    /// `single` in its oneshot form lasts until the item it was set for has ended (lock held).
    func endOneshot(_ m: inout Model) {
        guard m.queue.options.single, m.queue.options.oneshot else { return }
        var options = m.queue.options
        options.single = false
        options.oneshot = false
        _ = try? edit(&m, .setOptions(options: options, randomSeed: m.randomSeed))
        settingsEvents.yield(.queueOptions)
    }

    /// An engine item failed: the current one (a load's answer, or a queue skip) or the one
    /// named to follow it (skipped before it is heard). Lock held.
    func itemFailed(_ id: Int, _ error: PlaybackError, _ m: inout Model) {
        if id == m.context.currentItem {
            if let queueID = m.inPlay[id]?.queueID { queueEvents.yield(.itemFailed(id: queueID, kind: error.kind, message: error.message)) }
            logger.warning("item failed", metadata: ["error": "\(error)"])
            guard m.context.skipsFailures, !error.isDeviceFailure else {
                takeLoadWaiter(id, &m)?.resume(returning: .failed(error))
                for waiter in m.seekWaiters { waiter.continuation.resume(returning: .failed(error)) }
                m.seekWaiters = []
                m.context.pendingNext = nil
                m.pendingNextQueueID = nil
                engine.stop()
                return
            }
            // A queue skips what cannot play, and ends cleanly when nothing in it can.
            m.failuresInRow += 1
            let waiter = takeLoadWaiter(id, &m)
            // Failed on the way to playing, or while playing (a dropped stream, damage mid-file):
            // the queue plays on.
            let state = machine.currentState
            let playing = m.inPlay[id]?.playsOnReady == true || state == .playing || state.isResumingPlaying
            if let failed = m.inPlay[id]?.queueID, m.failuresInRow < m.queue.items.count,
                let next = m.queue.userNext(after: failed)
            {
                open(&m, queueID: next, cause: .goesOn(play: playing), waiter: waiter)
            } else {
                // Stopped first, then answered: the answer's reader sees the state it led to.
                m.failuresInRow = 0
                machine.send(.stop)
                stopEngine(&m)
                waiter?.resume(returning: .failed(error))
            }
        } else if id == m.context.pendingNext, let failed = m.inPlay[id]?.queueID {
            queueEvents.yield(.itemFailed(id: failed, kind: error.kind, message: error.message))
            m.failuresInRow += 1
            m.context.pendingNext = nil
            m.pendingNextQueueID = nil
            refreshNext(&m, after: failed)
        }
    }

    /// Names to the engine the item to join after the current one, when it changed (lock held).
    /// `after` skips from a queue item that failed before it was heard.
    func refreshNext(_ m: inout Model, after skipped: Int? = nil) {
        guard let current = m.context.currentItem, let currentQueueID = m.inPlay[current]?.queueID else { return }
        switch machine.currentState {
        case .idle, .loading, .failed: return
        default: break
        }
        var wanted = m.queue.next(after: skipped ?? currentQueueID)
        // The sleep timer pauses where this item ends: nothing is joined to it.
        if sleepsAfter(skipped ?? currentQueueID, m) { wanted = nil }
        if wanted != nil, m.failuresInRow >= max(m.queue.items.count, 1) { wanted = nil }
        if wanted == m.pendingNextQueueID, skipped == nil, m.context.pendingNext != nil || wanted == nil { return }
        if let wanted, let item = m.queue.item(id: wanted) {
            m.nextEngineID += 1
            let engineID = m.nextEngineID
            var next = engineItem(engineID, item, m)
            // The engine joins it to the current item (one that failed in between is skipped).
            next.joinsGaplessly = keepsAlbumGapless(item, after: currentQueueID, m)
            next.durationHint = tags.tags(for: item.url)?.duration
            guard engine.setNext(next, after: current) else { return }
            if let old = m.context.pendingNext { m.inPlay[old] = nil }
            m.inPlay[engineID] = InPlay(queueID: wanted, reason: .advance)
            m.context.pendingNext = engineID
            m.pendingNextQueueID = wanted
        } else {
            guard engine.setNext(nil, after: current) else { return }
            if let old = m.context.pendingNext { m.inPlay[old] = nil }
            m.context.pendingNext = nil
            m.pendingNextQueueID = nil
        }
    }

    func announceItem(_ engineID: Int, _ m: Model) {
        guard let inPlay = m.inPlay[engineID], let item = m.queue.item(id: inPlay.queueID) else { return }
        queueEvents.yield(.item(id: inPlay.queueID, url: item.url, reason: inPlay.reason))
    }

    /// The load or jump waiting for `engineID`'s news, taken so it is answered once (lock held).
    func takeLoadWaiter(_ engineID: Int, _ m: inout Model) -> CheckedContinuation<LoadOutcome, Never>? {
        defer { m.inPlay[engineID]?.loadWaiter = nil }
        return m.inPlay[engineID]?.loadWaiter
    }
}
