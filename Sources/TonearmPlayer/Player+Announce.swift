import Foundation
import TonearmCore
import TonearmEngine
import TonearmMedia

/// Announcements (`announce`): what plays fades out, the clip plays at its own volume, then
/// playback comes back exactly: the same item at the same position (a live stream rejoins
/// live), the same volume, playing or paused as it was. The machine keeps its state throughout
/// and the queue does not change: `AnnouncementOverlay` (the core) decides, this carries it out.
/// The clip is an engine item of its own; the adapter takes its news as another item's (none
/// moves the machine), and `handle` hands its end here. Asked to `duck`, the first of a run
/// plays over the music instead (`PlayerEngine.playOverlay`), the music lowered to
/// `announce.duck_level` meanwhile, and nothing stops or comes back.
extension Player {
    /// How long what plays fades out before an announcement.
    static let announcementFade = 0.3

    /// Plays `url` over what plays. Returns its place in line: 0 plays now, n waits behind n − 1
    /// others. The point to come back to is saved with the state at once. `duck`: the music
    /// plays on, lowered, under it (when something plays).
    @discardableResult
    package func announce(_ url: URL, volume: Int?, duck: Bool = false) throws(PlayerError) -> Int {
        if let volume, !Bounds.volume.contains(volume) {
            throw .invalid("volume must be a whole number from \(Bounds.text(Bounds.volume))")
        }
        return try model.withLock { m throws(PlayerError) in
            let point = returnPoint(m)
            // Ducking needs sound under it now: an item still loading has no device open to mix into.
            let ducks = duck && machine.currentState.wantsSound
            let clip = AnnouncementOverlay.Clip(url: url.absoluteString, volume: volume, duck: ducks)
            switch m.announcements.handle(.announce(clip, returnPoint: point)) {
            case .refused:
                throw .invalid("\(AnnouncementOverlay.maximumWaiting) announcements wait already")
            case .queued(let place):
                return place
            case .fadeOutAndPlay(let clip):
                logger.info("announcement", metadata: ["url": "\(clip.url)"])
                supersedeWaiters(&m)
                // The item that played is over until playback comes back: its news (an end, a
                // gapless border crossed during the fade) is no longer the machine's.
                m.context.currentItem = nil
                m.context.pendingNext = nil
                m.context.expectedSeekToken = nil
                m.pendingNextQueueID = nil
                changeObserver?.playerChanged()
                if point.queueID != nil && point.playing {
                    engine.fade(to: 0, over: Self.announcementFade)
                    let at = Date().addingTimeInterval(Self.announcementFade + engine.outputLead)
                    timer.schedule(.announce, at: at) { [weak self] in self?.playClipAfterFade(clip) }
                } else {
                    playClip(clip, &m)
                }
                return 0
            case .duckAndPlay(let clip):
                logger.info("announcement over the music", metadata: ["url": "\(clip.url)"])
                engine.duck(to: Self.factor(announcementSettings.duckLevel), over: Self.announcementFade)
                playOverMusic(clip, &m)
                changeObserver?.playerChanged()
                return 0
            default:
                return 0
            }
        }
    }

    /// The announcement playing and how many wait (nil: none).
    package var announcing: (url: String, waiting: Int)? {
        model.withLock { m in m.announcements.playing.map { ($0.url, m.announcements.waiting.count) } }
    }

    /// Where playback stands, to come back to (lock held).
    private func returnPoint(_ m: Model) -> AnnouncementOverlay.ReturnPoint {
        let state = machine.currentState
        let resumable: Bool =
            switch state {
            case .ready, .playing, .paused, .buffering, .seeking, .loading: true
            case .idle, .ended, .failed: false
            }
        guard resumable, let current = m.context.currentItem, let queueID = m.inPlay[current]?.queueID else {
            return .init(queueID: nil, position: 0, playing: false, live: false)
        }
        let heard = engine.heard
        var position = heard.itemID == current ? Self.shown(heard.seconds, duration: m.inPlay[current]?.media?.duration) : 0
        if case .seeking(let target, _) = state { position = target }
        // Reopened after an announcement and not ready yet: it stands where it came back to.
        if let standsAt = m.standsAt { position = standsAt }
        let playing = state.wantsSound || (state.isLoading && m.inPlay[current]?.playsOnReady == true)
        return .init(queueID: queueID, position: position, playing: playing, live: m.inPlay[current]?.media?.isLive == true)
    }

    private func playClipAfterFade(_ clip: AnnouncementOverlay.Clip) {
        model.withLock { m in
            guard m.announcements.playing == clip, m.announcementEngineID == nil else { return }
            playClip(clip, &m)
        }
    }

    /// Opens the clip, playing, at its volume and full level (lock held).
    private func playClip(_ clip: AnnouncementOverlay.Clip, _ m: inout Model) {
        guard let url = URL(string: clip.url) else { return }
        m.nextEngineID += 1
        m.announcementEngineID = m.nextEngineID
        engine.setVolume(Self.factor(clip.volume ?? m.volume))
        engine.fade(to: 1, over: 0)
        engine.duck(to: 1, over: 0)
        _ = engine.open(EngineItem(id: m.nextEngineID, url: url), startAt: 0, playing: true)
    }

    /// Mixes the clip over the music at its volume (lock held).
    private func playOverMusic(_ clip: AnnouncementOverlay.Clip, _ m: inout Model) {
        guard let url = URL(string: clip.url) else { return }
        m.nextEngineID += 1
        m.announcementEngineID = m.nextEngineID
        engine.playOverlay(EngineItem(id: m.nextEngineID, url: url), gain: Self.factor(clip.volume ?? m.volume))
    }

    /// News of the clip playing (lock held): its end, or its failure, moves the overlay on.
    func clipNews(_ event: EngineEvent, _ m: inout Model) {
        let overlayEvent: AnnouncementOverlay.Event
        switch event {
        case .didPlayToEnd: overlayEvent = .clipEnded
        case .failed(_, let failure), .deviceLost(_, let failure, _):
            logger.warning("announcement could not be played", metadata: ["error": "\(failure.message)"])
            overlayEvent = .clipFailed
        default: return
        }
        m.announcementEngineID = nil
        switch m.announcements.handle(overlayEvent) {
        case .play(let next): m.announcements.ducks ? playOverMusic(next, &m) : playClip(next, &m)
        case .resume(let point): comeBack(to: point, playing: point.playing, &m)
        case .unduck:
            engine.duck(to: 1, over: Self.announcementFade)
            changeObserver?.playerChanged()
        default: break
        }
    }

    /// A user's command during an announcement ends them all (lock held). `playing` nil: the
    /// command decides what plays (a load, a jump, a stop); else playback comes back to its
    /// point, playing or not, and the command acts on that. Returns the point, if there was one.
    @discardableResult
    func interruptAnnouncement(_ m: inout Model, playing: Bool?) -> AnnouncementOverlay.ReturnPoint? {
        let effect = m.announcements.handle(.interrupted)
        if effect == .abandonDucked {
            // The music never stopped: the clip fades out in 5 ms, the level comes back (over the
            // duck's time; a pause fades out at the lowered level and resumes at the full one),
            // and the command acts on the music.
            m.announcementEngineID = nil
            engine.stopOverlay()
            // Music that plays on comes back up over the duck's time; after a stop, a load or a
            // jump what plays next starts whole. A pause lifts it once asked (`perform`), so
            // that the pause's fade-out is at the lowered level.
            if playing != false { engine.duck(to: 1, over: playing == true ? Self.announcementFade : 0) }
            changeObserver?.playerChanged()
            return nil
        }
        guard case .abandon(let point) = effect else { return nil }
        timer.cancel(.announce)
        m.announcementEngineID = nil
        if let playing {
            comeBack(to: point, playing: playing, &m)
        } else {
            // The command decides what plays next; the clip (or the fade before it) ends now.
            engine.stop()
            engine.setVolume(Self.factor(m.volume))
            engine.fade(to: 1, over: 0)
        }
        return point
    }

    /// A seek during an announcement (lock held): the announcements end and the item comes back
    /// at the seek's target (relative: from the point it stood at), playing or paused as it was.
    /// nil when no announcement plays (or nothing is to come back to: the seek goes its way).
    func seekEndsAnnouncement(to position: Double, relative: Bool, _ m: inout Model) -> SeekOutcome? {
        if m.announcements.ducks {
            // Over the music: the clip ends and the seek goes its way in what plays.
            interruptAnnouncement(&m, playing: nil)
            return nil
        }
        guard let point = m.announcements.returnPoint, let queueID = point.queueID else { return nil }
        if point.live { return .rejected(.invalid("cannot seek in a live stream (state \(machine.currentState.name))")) }
        var target = min(max(0, relative ? point.position + position : position), SavedPlayerState.maximumPosition)
        if let duration = m.inPlay.values.first(where: { $0.queueID == queueID })?.media?.duration { target = min(target, duration) }
        guard case .abandon = m.announcements.handle(.interrupted) else { return nil }
        timer.cancel(.announce)
        m.announcementEngineID = nil
        let moved = AnnouncementOverlay.ReturnPoint(queueID: queueID, position: target, playing: point.playing, live: false)
        comeBack(to: moved, playing: point.playing, &m)
        return .landed(position: target, state: machine.currentState)
    }

    /// Back to where playback stood: the item reopened at its position (a live stream at its
    /// live edge), playing or not, at the player's volume; the machine has kept its state.
    private func comeBack(to point: AnnouncementOverlay.ReturnPoint, playing: Bool, _ m: inout Model) {
        timer.cancel(.announce)
        engine.setVolume(Self.factor(m.volume))
        engine.fade(to: 1, over: 0)
        engine.duck(to: 1, over: 0)
        changeObserver?.playerChanged()
        guard let queueID = point.queueID, m.queue.item(id: queueID) != nil, machine.currentState.isActive else {
            // Nothing to come back to (stopped, ended, or the item left the queue): stopped.
            if machine.currentState.isActive { machine.send(.stop) }
            stopEngine(&m)
            return
        }
        switch machine.currentState {
        case .playing, .paused, .ready:
            reopen(queueID, at: point.live ? 0 : point.position, playing: playing, &m)
        default:
            // A load, a seek or a buffering was under way: the item is loaded again, as a load
            // is, and the machine follows its news.
            open(&m, queueID: queueID, start: point.live ? 0 : point.position, cause: .goesOn(play: playing))
        }
    }

    /// Opens the queue item again in the engine, the machine keeping its state (lock held).
    private func reopen(_ queueID: Int, at start: Double, playing: Bool, _ m: inout Model) {
        guard let item = m.queue.item(id: queueID) else { return }
        m.nextEngineID += 1
        let engineID = m.nextEngineID
        m.context.currentItem = engineID
        m.context.pendingNext = nil
        m.context.expectedSeekToken = nil
        m.pendingNextQueueID = nil
        m.inPlay = [engineID: InPlay(queueID: queueID, reason: .user)]
        m.comingBack = (engineID, start)
        m.context.intent = engine.open(engineItem(engineID, item, m, opensAt: start), startAt: start, playing: playing)
    }
}

extension Player.Model {
    /// Where the current item stands while the engine does not hear it: during announcements,
    /// where playback comes back to; then, until the item reopened there is ready, that point.
    var standsAt: Double? {
        if let point = announcements.returnPoint, point.queueID != nil { return point.live ? 0 : point.position }
        if let back = comingBack, back.engineID == context.currentItem { return back.position }
        return nil
    }
}

extension PlaybackState {
    var isLoading: Bool { if case .loading = self { true } else { false } }

    /// Nothing plays or is about to: a clip over the music has nothing to go on with (paused
    /// here by a lost device: a user's pause ends the clip as any command does).
    var hasNothingToDuck: Bool {
        switch self {
        case .idle, .ended, .failed, .paused, .ready: true
        case .loading, .playing, .buffering, .seeking: false
        }
    }
}
