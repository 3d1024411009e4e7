import Foundation
import TonearmMedia

/// Plays a sequence of media items, gapless where formats allow: one decoder thread and one
/// output thread for the engine's life, a bounded pipe of item-tagged PCM chunks between them,
/// and a small command mailbox (`EngineControl`). Its public methods never block: they record
/// the command under the engine lock and wake the threads. Results arrive as events, each naming
/// the item it is about (see `observeEvents`); `observe` shows the snapshot's changes that
/// each event carried.
///
/// Threads: callers (any thread or task) · the decoder thread (FFmpeg: opens, decodes, seeks) ·
/// the output thread (the device: opens, writes, pauses, recovers, closes) · the delivery thread
/// `tonearm-events` (delivers callbacks). The cooperative thread pool is never blocked.
package final class PlayerEngine: Sendable {
    package let configuration: OutputConfiguration
    package let input: InputConfiguration
    let control: EngineControl

    package init(configuration: OutputConfiguration, input: InputConfiguration = InputConfiguration()) {
        self.configuration = configuration
        self.input = input
        control = EngineControl(configuration: configuration, input: input)
        DecoderWorker(shared: control, configuration: configuration, input: input).start()
        OutputWorker(shared: control, configuration: configuration).start()
    }

    deinit { shutdown() }

    // MARK: Observation

    /// Observes one property. Callbacks run on the engine's delivery thread, in the order
    /// of the changes; `.initial` delivers the current value first. Each change names the item
    /// it is about and the event that carried it. Keep the token alive.
    package func observe<Value: Equatable & Sendable>(
        _ keyPath: KeyPath<EngineSnapshot, Value> & Sendable,
        options: ObservationOptions = [.new],
        _ handler: @escaping @Sendable (PlayerEngine, ObservedChange<Value>) -> Void
    ) -> ObservationToken {
        control.observers.addSnapshotHandler(initial: options.contains(.initial)) { [weak self] old, new, event in
            guard let self else { return }
            if let old {
                guard options.contains(.new), old[keyPath: keyPath] != new[keyPath: keyPath] else { return }
                handler(
                    self,
                    ObservedChange(
                        itemID: new.itemID, oldValue: old[keyPath: keyPath], newValue: new[keyPath: keyPath],
                        event: event))
            } else {
                handler(self, ObservedChange(itemID: new.itemID, oldValue: nil, newValue: new[keyPath: keyPath], event: nil))
            }
        }
    }

    /// Observes the engine's events on the same queue, in the order they happened.
    package func observeEvents(_ handler: @escaping @Sendable (PlayerEngine, EngineEvent) -> Void) -> ObservationToken {
        control.observers.addEventHandler { [weak self] event in
            guard let self else { return }
            handler(self, event)
        }
    }

    package var snapshot: EngineSnapshot { control.observers.snapshot }
    package var status: EngineStatus { snapshot.status }
    package var timeControlStatus: TimeControlStatus { snapshot.timeControlStatus }
    package var duration: Double? { snapshot.duration }
    package var mediaInfo: MediaInfo? { snapshot.mediaInfo }

    /// The item being heard and the exact position in it, in seconds.
    package var heard: (itemID: Int, seconds: Double) {
        control.lock.withLock { control.pendingPauseStands ?? control.clock.position(now: control.clockNow) }
    }

    /// `heard`, and the seconds of decoded audio not yet heard (a network source's buffer): what
    /// waits in the pipe and what the device holds, read together under one lock.
    package var heardAndBuffered: (itemID: Int, seconds: Double, buffered: Double) {
        control.lock.withLock {
            let c = control
            let now = c.clockNow
            let heard = c.clock.heard(now: now)
            let rate = Double(max(1, heard.sampleRate))
            // The head chunk's written frames are the device's now: counted once, as held.
            let written = c.pipe.first.map { Double($0.written) / Double($0.format.sampleRate) } ?? 0
            let held = c.clock.held(now: now) / rate
            let buffered = max(0, c.pipe.bufferedSeconds - written) + held
            if let stands = c.pendingPauseStands { return (stands.itemID, stands.seconds, buffered) }
            return (heard.itemID, Double(heard.frame) / rate, buffered)
        }
    }

    package var currentTime: Double { heard.seconds }

    /// Info of an item opened and still in play (the heard one, or one decoded ahead).
    package func mediaInfo(for itemID: Int) -> MediaInfo? { control.lock.withLock { control.info(for: itemID) } }

    // MARK: Commands

    /// Replaces whatever plays with `item`, from `startAt` seconds. The item's news (`ready` or
    /// `failed`) carries its id. With `playing` it plays as soon as it is ready; without, it
    /// waits, ready, whatever played before: what the engine does is what its caller's state
    /// says, never the previous item's play state carried over. Returns the intent number of
    /// this command (see `play`): the open is the play or pause its item starts with.
    @discardableResult
    package func open(_ item: EngineItem, startAt: Double = 0, playing: Bool = false) -> Int {
        control.lock.withLock {
            control.remember(item)
            control.play.intent += 1
            control.play.requested = playing
            if !playing { control.play.resumeOnRestore = false }
            // Playing, the new item's first frames reaching the device are news too.
            if playing { control.play.requestedAt = EngineLock.now() }
            control.target = DecodeTarget(item: item, startSeconds: max(0, startAt.isFinite ? startAt : 0), runStart: .opened)
            control.next = nil
            control.beginEpoch()
            control.post(.loadStarted(itemID: item.id, url: item.url.absoluteString))
            return control.play.intent
        }
    }

    /// Names the item to play after `after` ends, decoded ahead and joined without a gap. nil
    /// withdraws it. An item named before and already partly handed to the device is taken
    /// back from it (while `after` is still heard). Returns false when `after` is no longer
    /// where playback could go on from (it ended, or a later item is heard or about to be, too
    /// soon to take it back): the caller acts on that news instead.
    @discardableResult
    package func setNext(_ item: EngineItem?, after: Int) -> Bool {
        control.lock.withLock {
            let c = control
            if c.chainEndedAfter == after { return false }
            if let written = c.output.lastWrittenItem, written > after, c.output.epoch == c.epoch {
                guard item?.id != c.next?.item.id else { return true }
                guard c.canTakeBack(after: after) else { return false }
                c.commands.send(.takeBack(after: after, epoch: c.epoch))
            }
            if let old = c.next, old.after == after, old.item.id != item?.id {
                // What was decoded ahead is not wanted any more.
                c.items.abandoned.append(old.item.id)
                if c.decoder.itemID == old.item.id { c.decoder.cancellation.cancel() }
            }
            if let item {
                c.remember(item)
                c.next = (after, item)
            } else if c.next?.after == after {
                c.next = nil
            }
            c.lock.wakeAll()
            return true
        }
    }

    /// Corrects what is known of the next item after `after` (its tags were read since it was
    /// named): the decoder weighs it when `after` ends.
    package func updateNext(after: Int, joinsGaplessly: Bool?, durationHint: Double?) {
        control.lock.withLock {
            guard var next = control.next, next.after == after else { return }
            next.item.joinsGaplessly = joinsGaplessly
            next.item.durationHint = durationHint
            control.next = next
            control.lock.wakeDecoder()
        }
    }

    /// Returns the intent number of this command: output news about play state carries the
    /// number it acted on, so news from before this command can be told apart.
    @discardableResult
    package func play() -> Int { setPlaying(true) }

    @discardableResult
    package func pause() -> Int { setPlaying(false) }

    /// Returns once the pause asked last is answered: the output planned its fade-out and knows
    /// the frame it ends on (the position reads as that frame from then on), or the device
    /// paused, or the pause was superseded (a play, a stop), or at once when none is pending.
    /// The position then stays where it is.
    package func pauseTakesEffect() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            control.lock.withLock {
                guard !control.pauseIsAnswered else {
                    continuation.resume()
                    return
                }
                control.waits.pause.append(continuation)
                control.lock.wakeOutput()
            }
        }
    }

    private func setPlaying(_ playing: Bool) -> Int {
        control.lock.withLock {
            let c = control
            c.play.intent += 1
            // A new play or pause: where an earlier pause was to stand says nothing of it.
            c.play.pauseStandsAt = nil
            // A pause asked while the device is away is kept: the device's return must not undo it.
            if !playing { c.play.resumeOnRestore = false }
            // A refill asked while playing has nothing to drop; left set, a later pause would redo it.
            if playing { c.commands.send(.refillWhilePaused(false)) }
            if c.play.requested != playing {
                if playing { rejoinIfLiveAndStale() }
                c.play.requested = playing
                if playing {
                    c.play.requestedAt = EngineLock.now()
                } else {
                    // A pause that fades out runs on until the output says when its fade is heard.
                    c.play.pauseRequestedAt = configuration.fadesOnPause && c.clock.consuming ? .infinity : EngineLock.now()
                }
                c.lock.wakeOutput()
                // A decoder that waits, paused, to hear whether an item crossfades counts from now.
                if playing { c.lock.wakeDecoder() }
            }
            return c.play.intent
        }
    }

    /// A live stream left paused (or ready) longer than `liveRejoinAfter` is joined again, live,
    /// when play is asked: what the pipe and the connection kept is minutes old (MPD#322). A
    /// shorter pause goes on where it stopped. Lock held.
    private func rejoinIfLiveAndStale() {
        let c = control
        guard let heard = c.heardItemID, c.info(for: heard)?.isLive == true, let item = c.knownItem(heard),
            c.target != nil, !c.clock.consuming, EngineLock.now() - c.output.stoppedConsumingAt > Self.liveRejoinAfter
        else { return }
        c.target = DecodeTarget(item: item, startSeconds: 0, runStart: .seek(token: EngineControl.internalSeekToken))
        c.beginEpoch()
    }

    /// Two seconds: a pause that long already puts a live stream noticeably behind its air.
    package static let liveRejoinAfter = 2.0

    /// Seeks the item last announced as heard (its `started` or its landing was posted): the
    /// one the player takes as current. Not the one the clock says is heard by now: right after
    /// a gapless border the output thread may not have announced the next item yet, and a seek
    /// of it would be answered about an item the player does not know as current (never
    /// answered). Its `seekCompleted` event carries `token`. `playing` sets whether sound goes on
    /// after the landing. Returns the item's id, or nil when nothing is loaded.
    @discardableResult
    package func seek(to seconds: Double, token: Int, playing: Bool) -> Int? {
        control.lock.withLock {
            let c = control
            let announced = c.clock.rest.itemID
            guard let itemID = (announced != 0 ? announced : nil) ?? c.target?.item.id,
                let item = c.knownItem(itemID)
            else { return nil }
            c.target = DecodeTarget(item: item, startSeconds: max(0, seconds.isFinite ? seconds : 0), runStart: .seek(token: token))
            c.beginEpoch()
            if c.play.requested != playing {
                c.play.requested = playing
                if playing { c.play.requestedAt = EngineLock.now() } else { c.play.pauseRequestedAt = EngineLock.now() }
            }
            return itemID
        }
    }

    /// Sets how long an item and the next overlap, seconds, 0…15 (0: gapless). It applies to
    /// the next item whose end the decoder has not reached yet.
    package func setCrossfade(seconds: Double) {
        control.lock.withLock {
            control.commands.send(.setCrossfade(seconds.isFinite ? min(max(seconds, 0), 15) : 0))
        }
    }

    /// Mixes `item` over what plays, at `gain` (0…1), converted to the format the device is open
    /// in, from its first frame; replaces a clip mixed before. It goes on as the music is written
    /// (paused with it); its end is posted as `didPlayToEnd` with its id, a clip that cannot be
    /// opened as `failed`. Nothing playing (no device open): it fails at once.
    package func playOverlay(_ item: EngineItem, gain: Double) {
        control.lock.withLock {
            control.overlay.request = (item, min(max(gain.isFinite ? gain : 1, 0), 1))
            control.overlay.serial += 1
            control.overlay.ring = nil
            control.overlay.cancellation.cancel()
            control.lock.wakeDecoder()
        }
    }

    /// Stops the clip mixed over the music, if any: it fades out over 5 ms from the next write
    /// (no news of it follows).
    package func stopOverlay() {
        control.lock.withLock {
            guard control.overlay.request != nil else { return }
            control.overlay.request = nil
            control.overlay.serial += 1
            if let ring = control.overlay.ring, ring.fadeOutLeft == nil {
                ring.fadeOutLeft = GainStage.rampFrames(sampleRate: ring.format.sampleRate)
            }
            control.overlay.cancellation.cancel()
            control.lock.wakeDecoder()
        }
    }

    /// Software volume, 0…1 as a linear factor of the signal (1 = untouched); ramps, no click.
    package func setVolume(_ factor: Double) {
        control.lock.withLock {
            control.commands.send(.setVolume(min(max(factor.isFinite ? factor : 1, 0), 1)))
        }
    }

    /// Tells the engine an item's loudness, measured after it was named: it levels the item
    /// if the item's first frames have not reached the device yet, else it changes nothing.
    /// (Ids increase: an item at or before the one written last has been written.)
    package func setLoudness(_ measurement: LoudnessMeasurement, for itemID: Int) {
        control.lock.withLock {
            if let inForce = control.output.loudnessInForce, inForce.itemID >= itemID { return }
            guard let index = control.items.known.lastIndex(where: { $0.id == itemID }) else { return }
            control.items.known[index].loudness = measurement
        }
    }

    /// The loudness an item is leveled with: once its first frames were written, what was
    /// known then (nil: it plays at the preamp level); before, what is known now.
    /// `provisional`: only its opening's loudness (`EngineItem.openingLoudness`). And a live
    /// stream's automatic gain as last written, dB.
    package func loudnessInForce(for itemID: Int) -> (measurement: LoudnessMeasurement?, provisional: Bool, liveGainDB: Double?) {
        control.lock.withLock {
            let leveling = control.leveling(itemID)
            let live = control.output.loudnessInForce?.itemID == itemID ? control.output.liveGainInForce : nil
            return (leveling.measurement, leveling.provisional, live)
        }
    }

    /// Fades over the volume from `from` (nil: the level now) to `level` (0–1) over `seconds`
    /// of wall-clock time, starting with the next frames handed to the device. The level stays
    /// until the next fade: a sleep timer fades to 0, then back to 1 over 0 once paused.
    /// Returns the fade's serial, for `fadeHeard`.
    @discardableResult
    package func fade(from: Double? = nil, to level: Double, over seconds: Double) -> Int {
        control.lock.withLock {
            control.waits.latestFade += 1
            let serial = control.waits.latestFade
            control.commands.send(
                .fade(
                    FadeRequest(from: from.map { min(max($0, 0), 1) }, to: min(max(level, 0), 1), seconds: max(seconds, 0), serial: serial))
            )
            return serial
        }
    }

    /// Returns once the last frame of fade `serial` is heard; or once it cannot be (nothing
    /// plays, the device is away, or a newer fade replaced it).
    package func fadeHeard(_ serial: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            control.lock.withLock {
                let c = control
                guard !c.fadeWaitIsOver(serial, now: EngineLock.now()) else {
                    continuation.resume()
                    return
                }
                c.waits.fades.append((serial, continuation))
                c.lock.wakeOutput()
            }
        }
    }

    /// Lowers the music (under a ducked announcement) to `level` (0–1) over `seconds`, or brings
    /// it back with 1: a factor of its own beside `fade`'s, so that each comes back to where the
    /// other stands.
    package func duck(to level: Double, over seconds: Double) {
        control.lock.withLock {
            control.waits.latestDuck += 1
            control.commands.send(
                .duck(FadeRequest(from: nil, to: min(max(level, 0), 1), seconds: max(seconds, 0), serial: control.waits.latestDuck)))
        }
    }

    /// Paused: drops what the device holds unheard (faded out, say) and refills from the sample
    /// heard last, so that play resumes from there with the gain of now. No effect while playing.
    package func refillWhilePaused() {
        control.lock.withLock {
            control.commands.send(.refillWhilePaused(true))
            control.lock.wakeOutput()
        }
    }

    /// How far ahead of what is heard the output writes, at most, in seconds (0 when closed):
    /// a change applied at the next write is heard this much later.
    package var outputLead: Double { control.lock.withLock { control.output.leadSeconds / control.speed } }

    package func setReplayGain(_ settings: ReplayGainSettings) {
        control.lock.withLock { control.commands.send(.setReplayGain(settings)) }
    }

    /// Stops playback and releases the file; the device is released `output.release_after_s` later.
    package func stop() {
        control.lock.withLock {
            let c = control
            c.target = nil
            c.next = nil
            c.play.requested = false
            c.play.resumeOnRestore = false
            c.commands.send(.forgetLostDevice)
            c.beginEpoch()
            c.publish { snapshot in
                snapshot.status = .unknown
                snapshot.mediaInfo = nil
                snapshot.duration = nil
            }
            c.setTimeControl(.paused)
        }
    }

    /// Frames the device has taken since the engine started; it grows while audio flows.
    package var framesWritten: Int { control.lock.withLock { control.output.framesWritten } }

    /// Whether the output device is open now (see `OutputConfiguration.releaseAfterSeconds`).
    package var isDeviceOpen: Bool { control.lock.withLock { control.output.deviceOpen } }

    /// Stops the threads (the output closes the device at once). Idempotent.
    package func shutdown() {
        control.lock.withLock {
            control.overlay.cancellation.cancel()
            control.play.shuttingDown = true
            control.target = nil
            control.beginEpoch()
        }
    }

    /// After `shutdown`: waits until the output thread has closed the device, run
    /// `output.on_close` and left, off the cooperative pool.
    package func waitUntilShutDown() async {
        let control = self.control
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let thread = Thread {
                control.lock.withLock {
                    while !control.output.finished { control.lock.waitDecoder() }
                }
                continuation.resume()
            }
            thread.start()
        }
    }
}
