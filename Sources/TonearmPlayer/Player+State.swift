import Foundation
import TonearmCore
import TonearmEngine

/// Told of every change worth saving, and of the player's shutdown (see `StateKeeper`).
package protocol PlayerChangeObserver: AnyObject, Sendable {
    /// Where playback stands changed (a transition, a gapless join, the end of the resume at start): worth a
    /// snapshot. Queue edits, volume and ReplayGain go to `Player.changes` instead. Called with
    /// the player lock held: it must only note the change.
    func playerChanged()
    /// The player is about to stop for good: the state as it is now is the one to keep.
    func playerWillShutDown() async
}

/// The player's weak hold on its change observer.
struct WeakChangeObserver: Sendable {
    weak var observer: PlayerChangeObserver?
}

extension Player {
    /// The state to keep across a restart, as it is now.
    package var savedState: SavedPlayerState {
        var result: SavedPlayerState = model.withLock { m in
            let state = machine.currentState
            var queue = m.queue
            var position = 0.0
            if let current = m.context.currentItem, state.isActive {
                let heard = engine.heard
                if heard.itemID == current {
                    position = Self.shown(heard.seconds, duration: m.inPlay[current]?.media?.duration)
                } else if heard.itemID == m.context.pendingNext, let next = m.inPlay[heard.itemID]?.queueID {
                    // The engine already hears the item queued after the current one (a gapless
                    // join whose news the player has not taken up yet): saved as the player is
                    // about to have it, not as the current item back at its start.
                    do throws(QueueError) {
                        try queue.advance(from: m.queue.currentID, to: next)
                        position = Self.shown(heard.seconds, duration: m.inPlay[heard.itemID]?.media?.duration)
                    } catch {}
                }
            }
            var playback: SavedPlayerState.Playback =
                switch state {
                case .playing, .seeking(_, .playing), .buffering(.playing): .playing
                case .loading: m.inPlay.values.contains { $0.playsOnReady } ? .playing : .paused
                case .ready, .paused, .seeking, .buffering: .paused
                case .idle, .ended, .failed: .stopped
                }
            if let point = m.announcements.returnPoint, point.queueID != nil {
                // An announcement plays: what is kept is where playback comes back to.
                playback = point.playing ? .playing : .paused
            }
            if let standsAt = m.standsAt { position = standsAt }
            let notLoadedYet: Bool = if case .loading = state { true } else { state == .idle }
            if let pending = m.pendingResume, pending.itemID == m.queue.currentID, notLoadedYet {
                // The resume at start has not loaded the item yet: it stands where it stood.
                playback = pending.playback
                position = pending.position
            }
            var saved = SavedPlayerState(
                queue: queue, playback: playback, position: position, volume: m.volume,
                replayGain: m.replayGain)
            // Read under the player lock, which every change is recorded under: the snapshot
            // holds exactly the changes up to this number.
            saved.journalSequence = changes.recorded
            return saved
        }
        // Outside the player lock: one look at the tags for the whole queue.
        let items = result.queue.items
        var known: [Int: Double] = [:]
        for (item, seconds) in zip(items, tags.durations(for: items.map(\.url))) {
            if let seconds { known[item.id] = seconds }
        }
        result.durations = known.isEmpty ? nil : known
        return result
    }

    /// Brings back a saved state at start, at once: the queue, volume and ReplayGain. No I/O.
    /// `resume(_:mode:)` then loads the current item, in the background of a serving daemon.
    package func restore(_ saved: SavedPlayerState, resuming mode: ResumeMode) {
        model.withLock { m in
            changes.start(at: saved.journalSequence ?? 0)
            m.queue = saved.queue
            var options = m.queue.options
            options.crossfade = Self.bounded(crossfade: options.crossfade)
            // Only a hand-edited file changes here; the seed is unused as `random` stays as it was.
            m.queue.setOptions(options, randomSeed: 0)
            engine.setCrossfade(seconds: m.queue.options.crossfade)
            if mode != .off, let current = saved.queue.currentID, saved.playback != .stopped {
                m.pendingResume = (current, saved.playback, saved.position)
            }
            m.volume = saved.volume
            engine.setVolume(Self.factor(saved.volume))
            if let replayGain = saved.replayGain {
                // The target and the live gain are the config's; the mode and preamp, the user's.
                m.replayGain.mode = replayGain.mode
                m.replayGain.preampDB = replayGain.preampDB
                engine.setReplayGain(m.replayGain)
            }
            // What was known of the items' durations is shown until their tags are read again.
            var kept: [URL: Double] = [:]
            for item in saved.queue.items {
                if let seconds = saved.durations?[item.id], seconds.isFinite, seconds > 0,
                    seconds <= SavedPlayerState.maximumPosition
                {
                    kept[item.url] = seconds
                }
            }
            tags.keep(durations: kept)
            publishQueue(m)
            tags.request(m.queue.items.map(\.url))
            measureAhead(m)
        }
    }

    /// Unless `mode` is `off`, loads the saved current item at its position, paused, or playing
    /// if it was and `mode` is `playing`. An item that is gone since fails as any bad item does,
    /// and the queue goes on; a slow network source delays nothing but this. A user's command
    /// that moved playback elsewhere meanwhile is left alone.
    package func resume(_ saved: SavedPlayerState, mode: ResumeMode) async {
        // Done loading (or not to be loaded): from here the state as it is is the one to keep.
        defer {
            model.withLock { $0.pendingResume = nil }
            changeObserver?.playerChanged()
        }
        guard mode != .off, let current = saved.queue.currentID, saved.playback != .stopped,
            queue.currentID == current, state == .idle
        else { return }
        let play = mode == .playing && saved.playback == .playing
        do throws(PlayerError) {
            _ = try await jump(to: current, play: play, start: saved.position)
            // Ready at the position; a seek there makes it paused, as it was.
            if !play, queue.currentID == current, state == .ready, engine.mediaInfo?.isLive != true {
                _ = try await seek(to: saved.position)
            }
        } catch {
            logger.warning("cannot resume where playback stood", metadata: ["error": "\(error)"])
        }
    }
}
