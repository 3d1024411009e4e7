import Foundation
import TonearmMedia
import TonearmSync

/// The output thread, one for the engine's life: the only code that opens, configures, writes,
/// pauses, recovers, closes and reopens the device. It takes chunks from the pipe's head, acts
/// on the first chunk of each run (prepares the device, announces ready or a seek's landing),
/// writes one period at a time, and keeps the clock of what is heard. It holds the engine lock
/// except around device calls, and sleeps on its condition when there is nothing to do (idle
/// or paused: no wake-ups at all). With `pace`, it keeps one chunk ahead of a monotonic clock
/// running at `speed`, for devices that never block.
extension EngineControl {
    /// How long the pipe may stay empty while playing before buffering is reported.
    private static let starvationGrace = 0.1
    /// Marks the seek the engine makes itself, so no caller mistakes its completion for its own.
    static let internalSeekToken = Int.min

    /// What only the output thread sees; no lock needed.
    struct OutputState {
        /// The open device: owned by this thread alone.
        var device: (any OutputDevice)?
        var devicePaused = false
        var waitingReported = false
        /// Pacing clock: frames counted from `paceAnchor`, consumed at rate × speed.
        var paceAnchor = 0.0
        var pacedFrames = 0
        /// With pacing, frames this wake-up may still write: the device is topped up to
        /// `paceLeadFrames` + `pacedWriteFrames` across chunk ends before the thread sleeps again.
        var paceRoom = 0
        var gain = GainStage()
        /// After a reopen that resumes playing: the frames the device must take (a buffer's
        /// worth) before `device_restored` is announced, and where playback stood when it came
        /// back. A device that opens and then fails within its first buffer (a `file:` device on
        /// an unwritable path) is not announced as back, and what it took was never heard.
        var unconfirmedRestore: (framesToGo: Int, from: (itemID: Int, frame: Int64, sampleRate: Int))?
        /// The last loss announced, and the play/pause intent then: the same loss again, before
        /// the device took a frame and with no play or pause since, is not announced again.
        var announcedLoss: (reason: String, intent: Int)?
        /// A network item ran dry while playing: nothing more is written until it has
        /// `input.prebufferSeconds` again (or its end) in the pipe.
        var refilling = false
        /// The last chunk written was of a network item.
        var writingNetwork = false
        /// At the end of playback, the device was told to hand on what it holds (`drain`);
        /// cleared by every write.
        var endHandedOn = false
        /// A stream title written to the device and not yet heard: announced once the clock
        /// reaches its first frame.
        var titleToAnnounce: (itemID: Int, frame: Int64, title: StreamTitle)?
        /// Writes in a row that the device held none of, unpaced (see `outputTakesBatches`):
        /// one could be a real device that underran at once; two are a sink without a clock.
        var unheldWrites = 0
        /// When the device last had nothing to play (stopped, paused, the queue ended); nil
        /// while it plays. After `releaseAfterSeconds` of it the device is released.
        var idleSince: Double?
        /// The device was closed for idleness: a play opens it again for what is heard next.
        var released = false
        /// The `fadeRequest` and the `duckRequest` in force.
        var fadeSerial = 0
        var duckSerial = 0
        /// A pause fading out (`fadesOnPause`): the frames of its fade still to write; nil when
        /// no pause is fading. And whether the silence after it was written (or is not needed).
        var pauseFadeToWrite: Int?
        /// With a device that can take frames back (and fades on pause): the last frames written,
        /// for a pause that fades out from what is being heard (`fadeOutFromPlayingPoint`).
        var written: WrittenFrames?
        /// A pause faded out ahead of what was written: the pipe's frames after the fade are
        /// void, and the decoder starts again here once the device pauses (or play comes first).
        var refillFrom: (itemID: Int, frame: Int64, sampleRate: Int)?
        var pauseFadePadded = false
    }

    func startOutputThread() {
        NamedThread.start("tonearm-output") { [self] in runOutput() }
    }

    private func runOutput() {
        var state = OutputState()
        lock.lock()
        recordThread(.output)
        while true {
            resumePauseWaitersIfDone()
            resumeFadeWaitersIfHeard(now: EngineLock.now())
            if shuttingDown {
                closeDevice(&state)
                finishQueuedHooks()
                if hooksOpened, !configuration.onClose.isEmpty {
                    // Run here, not queued: the daemon exits once this thread has left.
                    hooksOpened = false
                    lock.unlock()
                    runHook(.onClose, configuration.onClose)
                    lock.lock()
                }
                outputFinished = true
                lock.wakeAll()
                lock.unlock()
                return
            }
            if let after = takeBackAfter {
                takeBack(after: after, &state)
                continue
            }
            dropVoidChunks()
            let head = pipe.first
            if let head, head.isNetwork, head.runStart != nil && head.runStart != .advance || state.refilling,
                awaitFill(head, &state)
            {
                continue
            }
            if let head, let run = head.runStart, run != .advance {
                if let awaited = deviceAwaited, head.announcedReady, awaited.intent == intent,
                    EngineLock.now() < nextReopenAt
                {
                    // The item waits for its device: the next attempt is due then, or at a play or pause.
                    lock.waitOutput(untilMonotonic: nextReopenAt)
                    continue
                }
                beginRun(head, run, &state)
                continue
            }
            // The item that waited for its device was replaced or stopped.
            deviceAwaited = nil
            if deviceLostReason != nil {
                reopenLostDevice(&state)
                continue
            }
            if target == nil && head == nil {
                // Stopped: sleep until a command comes, letting the device go when it is time.
                idle(&state)
                continue
            }
            if !playRequested {
                if state.unconfirmedRestore != nil {
                    // Paused before the restored device proved itself: it is back, not resuming.
                    state.unconfirmedRestore = nil
                    post(.deviceRestored(itemID: heardItemID ?? 0, resumes: false, intent: intent))
                }
                switch fadeOutForPause(head, &state) {
                case .waited: continue
                case .writeFade: break
                case .pauseNow:
                    // Pausing the device releases the lock: anything that came meanwhile is looked at
                    // before sleeping, or its wake-up would be lost.
                    if pauseDevice(&state) { continue }
                    if refillRequested {
                        // Once paused: what the device holds unheard is dropped and decoded again.
                        refillRequested = false
                        if state.device != nil {
                            rewindToHeard(now: EngineLock.now())
                            continue
                        }
                    }
                    idle(&state)
                    continue
                }
            } else if state.pauseFadeToWrite != nil, let device = state.device {
                // Play again during a pause's fade-out: the device never paused, the sound comes back up.
                state.pauseFadeToWrite = nil
                if let from = state.refillFrom {
                    // What followed the fade was taken back: it is decoded again from there.
                    state.refillFrom = nil
                    rewind(to: from, now: EngineLock.now())
                    continue
                }
                state.gain.unmute(frames: GainStage.rampFrames(sampleRate: device.format.sampleRate))
            }
            guard state.device != nil else {
                if state.released, let head {
                    reacquireDevice(for: head, &state)
                } else if state.released {
                    // Released at the end: a play is answered with the end again, as when open.
                    pipeRanDry(&state)
                } else {
                    // Playing before any run prepared the device (a stop raced a play): nothing to write.
                    lock.waitOutput()
                }
                continue
            }
            if !clock.consuming {
                startConsuming(&state)
                continue
            }
            if let head, head.runStart == .advance, head.format != deviceFormat {
                // The next item needs another format: the device plays out what it holds first.
                if reopenForAdvance(head, &state) { continue }
            }
            if waitForPace(&state) { continue }
            guard let head else {
                pipeRanDry(&state)
                continue
            }
            if head.runStart == .advance { head.runStart = nil }
            if head.remainingFrames == 0 {
                finishChunk(head, &state)
                continue
            }
            write(head, &state)
        }
    }

    // MARK: Network items

    /// Before a network item's run starts (a load, a seek, rejoining a live stream), and after it
    /// ran dry: sleeps until the pipe holds `input.prebufferSeconds` of it (the decoder wakes this
    /// thread at each chunk meanwhile). Returns true when it slept.
    private func awaitFill(_ head: PCMChunk, _ state: inout OutputState) -> Bool {
        assertOn(.output)
        guard !prebuffered(head.itemID) else {
            outputAwaitsFill = false
            if state.refilling && head.runStart == nil {
                // Going on after a refill: the pace counts from now, not from before the gap.
                state.refilling = false
                state.paceAnchor = EngineLock.now()
                state.pacedFrames = 0
                state.paceRoom = 0
            }
            return false
        }
        if head.runStart == .seek(token: Self.internalSeekToken), playRequested, !state.waitingReported {
            // Rejoining a live stream while playing: buffering until it is heard.
            reportBuffering(itemID: head.itemID, &state)
        }
        outputAwaitsFill = true
        resumePauseWaitersIfDone()
        lock.waitOutput()
        return true
    }

    private func reportBuffering(itemID: Int, _ state: inout OutputState) {
        assertOn(.output)
        state.waitingReported = true
        setTimeControl(.waitingToPlay)
        post(.bufferingStarted(itemID: itemID, intent: intent))
    }

    /// A network item ran dry while playing: the device plays out what it holds and stops
    /// cleanly (no underrun), and playing goes on once the prebuffer is full again.
    private func beginRefill(_ state: inout OutputState) {
        assertOn(.output)
        state.refilling = true
        guard let device = state.device else { return }
        let myEpoch = epoch
        lock.unlock()
        device.drain()
        lock.lock()
        guard epoch == myEpoch else { return }
        clock.heldFrames = 0
        clock.heldAt = EngineLock.now()
        announceTitleIfHeard(&state, now: clock.heldAt)
    }

    // MARK: Chunks

    /// Recycles chunks at the head that belong to an older epoch or an abandoned item.
    private func dropVoidChunks() {
        var dropped = false
        while let head = pipe.first, head.epoch != epoch || abandoned.contains(head.itemID) {
            pipe.popFirst()
            dropped = true
        }
        if dropped { lock.wakeDecoder() }
    }

    /// A chunk was written out: release it, note an item's end, wake the decoder at half free.
    private func finishChunk(_ head: PCMChunk, _ state: inout OutputState) {
        assertOn(.output)
        if head.endsItem { lastEndedItem = head.itemID }
        let halfEmptyBefore = pipeIsHalfEmpty
        pipe.popFirst()
        if !halfEmptyBefore && pipeIsHalfEmpty { lock.wakeDecoder() }
    }

    // MARK: Runs

    /// The first chunk after a load or a seek: what the device holds is void, the device must be
    /// open in the chunk's format, and the news is posted. Runs paused or playing.
    private func beginRun(_ head: PCMChunk, _ run: RunStart, _ state: inout OutputState) {
        assertOn(.output)
        let now = EngineLock.now()
        state.idleSince = nil
        if state.device != nil, deviceLostReason == nil {
            lock.unlock()
            state.device?.discard()
            lock.lock()
            state.devicePaused = false
        }
        clock.park(itemID: head.itemID, frame: head.position, sampleRate: head.format.sampleRate, now: now)
        clock.consuming = false
        stoppedConsumingAt = now
        outputAwaitsFill = false
        state.refilling = false
        state.titleToAnnounce = nil
        state.pauseFadeToWrite = nil
        state.refillFrom = nil
        // A new sound (a load, a seek) starts at full level; a refill goes on from a pause's silence.
        if run != .seek(token: Self.internalSeekToken) { state.gain.unmute(frames: 0) }
        // A live stream rejoined while buffering was reported: its first write reports the end.
        if run != .seek(token: Self.internalSeekToken) { state.waitingReported = false }
        // While the device is away a seek just moves the position; a load tries the device now.
        // A released device opens again for a load, or when play is asked; not for a paused seek.
        let needsDevice = (deviceLostReason == nil || run == .opened) && (!state.released || playRequested || run == .opened)
        if needsDevice && (deviceFormat != head.format || state.device == nil) {
            guard prepareDevice(for: head, run, &state) else { return }
        }
        head.runStart = nil
        outputEpoch = head.epoch
        lastEndedItem = nil
        let position = Double(head.position) / Double(head.format.sampleRate)
        publishHeard(head.itemID, position: position)
        if head.announcedReady {
            // Its device appeared: it was announced ready (and interrupted, if play was asked).
            deviceAwaited = nil
            let resume = resumeOnRestore || playRequested
            resumeOnRestore = false
            playRequested = resume
            if resume { playRequestedAt = EngineLock.now() }
            post(.deviceRestored(itemID: head.itemID, resumes: resume, intent: intent))
            return
        }
        switch run {
        case .opened:
            publish { $0.status = .readyToPlay }
            setTimeControl(.paused)
            post(.ready(itemID: head.itemID))
        case .seek(let token):
            post(.seekCompleted(itemID: head.itemID, token: token, position: position))
        case .advance:
            break
        }
    }

    /// Opens the device in `head`'s format (closing it first if open in another). Returns false
    /// when that failed (the item failed, or the decoder redoes it in the granted format).
    private func prepareDevice(for head: PCMChunk, _ run: RunStart, _ state: inout OutputState) -> Bool {
        assertOn(.output)
        closeDevice(&state)
        let requested = head.format
        switch openDevice(requested) {
        case .failure(let failure)
        where configuration.waitForDevice && failure.kind == .deviceUnavailable
            && run == .opened && head.epoch == epoch:
            awaitDevice(for: head, failure)
            return false
        case .failure(let failure):
            deviceLostReason = nil
            if head.epoch == epoch {
                // The item cannot be heard: it fails, and nothing more is decoded.
                target = nil
                next = nil
                playRequested = false
                resumeOnRestore = false
                beginEpoch()
                publish { $0.status = .failed(failure) }
                post(.failed(itemID: head.itemID, failure))
            }
            return false
        case .success(let device):
            adoptDevice(device, &state)
            deviceFormat = device.format
            state.devicePaused = false
            if deviceLostReason != nil {
                // A load while the device was away brought it back.
                deviceLostReason = nil
            }
            if device.format != requested, head.epoch == epoch {
                // The device plays another format: the decoder converts to it, from this run's start.
                grantedFormats[requested] = device.format
                if let item = knownItem(head.itemID) {
                    target = DecodeTarget(
                        item: item, startSeconds: Double(head.position) / Double(requested.sampleRate),
                        runStart: run)
                }
                beginEpoch()
                return false
            }
            return true
        }
    }

    /// Before an item of another format: play out what the device holds (the previous item is
    /// heard to its last sample), then reopen. Returns true when the loop should go round again.
    private func reopenForAdvance(_ head: PCMChunk, _ state: inout OutputState) -> Bool {
        assertOn(.output)
        let now = EngineLock.now()
        if let device = state.device {
            if waitUntilPlayedOut(device, state, now: now) { return true }
            let myEpoch = epoch
            lock.unlock()
            device.drain()
            lock.lock()
            if epoch != myEpoch || !playRequested { return true }
        }
        // The previous item is heard to its last sample; the next one's first write starts a new
        // segment, and crossing into it posts `started` as at a gapless border.
        crossBorders(now: .infinity)
        let heard = clock.heard(now: .infinity)
        clock.park(itemID: heard.itemID, frame: heard.frame, sampleRate: heard.sampleRate, now: EngineLock.now())
        clock.consuming = false
        _ = prepareDevice(for: head, .advance, &state)
        return true
    }

    // MARK: Pacing

    /// With pacing, sleeps while more than `paceLeadFrames` are ahead of the clock. Returns true when it slept.
    /// Once awake it writes until `pacedWriteFrames` more are ahead (`paceRoom`), across the end
    /// of a chunk: one wake-up per piece, where a piece cut at each chunk's end cost two.
    /// A border heard meanwhile wakes it: a piece holds 250 ms, and `started` is due at the
    /// border's sample, not at the next write.
    private func waitForPace(_ state: inout OutputState) -> Bool {
        assertOn(.output)
        guard configuration.pace, let device = state.device else { return false }
        guard state.paceRoom <= 0 else { return false }
        let now = EngineLock.now()
        let rate = Double(device.format.sampleRate) * speed
        let ahead = pacedAhead(state, rate: rate, now: now)
        let lead = Double(paceLeadFrames(device))
        guard ahead > lead else {
            state.paceRoom = Int((lead - ahead).rounded(.up)) + pacePieceFrames(device)
            return false
        }
        crossBorders(now: now)
        let paceAt = state.paceAnchor + (Double(state.pacedFrames) - lead) / rate
        // A border not after `now` is one `crossBorders` just missed by a rounding: the pace wakes it.
        let borderAt = clock.nextSegmentHeardAt.flatMap { $0 > now ? $0 : nil } ?? paceAt
        lock.waitOutput(untilMonotonic: min(paceAt, borderAt))
        return true
    }

    /// With pacing, the frames handed to the device that the pace's clock has not consumed by `now`.
    private func pacedAhead(_ state: OutputState, rate: Double, now: Double) -> Double {
        Double(state.pacedFrames) - (now - state.paceAnchor) * rate
    }

    /// What one write hands the device: a period; with pacing what is left of this wake-up's
    /// piece (`paceRoom`, up to the device's `pacedWriteFrames`), since the clock (not the
    /// device) decides when to write and each wake-up costs. A device without a clock
    /// (`outputTakesBatches`) takes a whole chunk at once: nothing is heard from it, so the
    /// clock's steps may be coarse.
    private func chunkFrames(_ device: any OutputDevice, _ state: OutputState) -> Int {
        if configuration.pace { return max(1, state.paceRoom) }
        return outputTakesBatches ? .max : device.periodFrames
    }

    /// With pacing, how far ahead of the clock the output stays at least (a period, at least
    /// 100 ms): a wake-up a little late still finds the device holding audio.
    private func paceLeadFrames(_ device: any OutputDevice) -> Int {
        max(device.periodFrames, device.format.sampleRate / 10)
    }

    /// With pacing, what one wake-up writes: the device's `pacedWriteFrames`. On a device that
    /// can take frames back, `write` holds what follows an unheard border within the buffer.
    private func pacePieceFrames(_ device: any OutputDevice) -> Int { device.pacedWriteFrames }

    // MARK: The end, and starvation

    /// Playing with nothing in the pipe: the end of the last item (play out, then report), or the
    /// decoder falling behind (report buffering after a grace period).
    private func pipeRanDry(_ state: inout OutputState) {
        assertOn(.output)
        let now = EngineLock.now()
        if let ended = lastEndedItem, !moreComing(after: ended) {
            if chainEndedAfter == ended {
                if playRequested {
                    // A play that crossed the end's news (its caller had not heard of it yet):
                    // the end is said again, never waited out in silence as if playing.
                    playRequested = false
                    post(.didPlayToEnd(itemID: ended))
                    setTimeControl(.paused)
                }
                idle(&state)
                return
            }
            if let device = state.device {
                if !state.endHandedOn {
                    // Hands the device's last frames on at once (a `file:` device writes them only
                    // now; a Snapcast server is sent the silence that completes its last chunk
                    // before a pause in the data could make it call the stream idle).
                    state.endHandedOn = true
                    let myEpoch = epoch
                    lock.unlock()
                    device.drain()
                    lock.lock()
                    if epoch != myEpoch || !playRequested || !pipe.isEmpty { return }
                }
                if waitUntilPlayedOut(device, state, now: EngineLock.now()) { return }
            }
            crossBorders(now: .infinity)
            let heard = clock.heard(now: .infinity)
            clock.park(itemID: heard.itemID, frame: heard.frame, sampleRate: heard.sampleRate, now: EngineLock.now())
            clock.consuming = false
            chainEndedAfter = ended
            playRequested = false
            confirmRestore(&state, itemID: ended)
            post(.didPlayToEnd(itemID: ended))
            setTimeControl(.paused)
            return
        }
        if state.waitingReported {
            lock.waitOutput()
        } else if !lock.waitOutput(untilMonotonic: now + Self.starvationGrace), pipe.isEmpty, playRequested,
            decoderEpoch == epoch
        {
            reportBuffering(itemID: heardItemID ?? 0, &state)
            if state.writingNetwork { beginRefill(&state) }
        }
    }

    /// With pacing, the device never blocks, so the clock says when what it holds has been
    /// heard: sleeps until then. Returns true when it slept (the caller goes round again).
    private func waitUntilPlayedOut(_ device: any OutputDevice, _ state: OutputState, now: Double) -> Bool {
        guard configuration.pace else { return false }
        let drainedAt = state.paceAnchor + Double(state.pacedFrames) / (Double(device.format.sampleRate) * speed)
        guard now < drainedAt else { return false }
        lock.waitOutput(untilMonotonic: drainedAt)
        return true
    }

    /// Whether the decoder will still deliver something after `itemID` in this epoch.
    private func moreComing(after itemID: Int) -> Bool {
        if decoderEpoch != epoch { return true }
        if let working = decoderItemID, working != itemID, !abandoned.contains(working) { return true }
        if let next, next.after == itemID, next.item.id != decoderFailedNextID { return true }
        return false
    }

    // MARK: Writing

    private func write(_ head: PCMChunk, _ state: inout OutputState) {
        assertOn(.output)
        guard let device = state.device else { return }
        if state.waitingReported {
            state.waitingReported = false
            setTimeControl(.playing)
            post(.bufferingEnded(itemID: head.itemID, intent: intent))
        }
        let format = head.format
        var frames = min(head.remainingFrames, chunkFrames(device, state), state.pauseFadeToWrite ?? .max)
        if configuration.pace, device.canRewind, head.itemID != clock.rest.itemID {
            // Past a border not yet heard: the next item's frames must stay within the device's
            // buffer, where a take-back can still reach them (`takeBack`).
            let ahead = Int(pacedAhead(state, rate: Double(format.sampleRate) * speed, now: EngineLock.now()))
            let room = device.bufferFrames - ahead
            if room <= 0 && ahead > paceLeadFrames(device) {
                state.paceRoom = 0  // sleeps in `waitForPace` until the border comes nearer
                return
            }
            frames = min(frames, max(device.periodFrames, room))
        }
        let pointer = head.bytes + head.written * format.bytesPerFrame
        if loudnessInForce?.itemID != head.itemID {
            let taken = leveling(head.itemID)
            loudnessInForce = (head.itemID, taken.measurement, taken.provisional)
        }
        let itemGain = replayGain.gain(
            tags: head.replayGain, loudness: loudnessInForce?.measurement,
            prefersAlbum: head.prefersAlbumGain, provisional: loudnessInForce?.provisional ?? false)
        liveGainInForce = head.liveGainDB
        // A pause's fade-out goes on at the level it began with: a level asked with or after the
        // pause (the sleep timer's back to full, a duck lifted) is in force from the resume.
        if playRequested && state.pauseFadeToWrite == nil {
            if fadeRequest.serial != state.fadeSerial {
                state.fadeSerial = fadeRequest.serial
                state.gain.fade(from: fadeRequest.from, to: fadeRequest.to, frames: fadeRequest.frames(format, speed))
            }
            if duckRequest.serial != state.duckSerial {
                state.duckSerial = duckRequest.serial
                state.gain.duck(to: duckRequest.to, frames: duckRequest.frames(format, speed))
            }
        }
        let gainTarget = volume * GainStage.factor(decibels: itemGain.decibels + (head.liveGainDB ?? 0))
        lastWrittenItem = head.itemID
        state.writingNetwork = head.isNetwork
        state.endHandedOn = false
        if let title = head.streamTitle {
            head.streamTitle = nil
            state.titleToAnnounce = (head.itemID, head.position, title)
        }
        let unscaled = head.written + frames - head.gained
        let overlay = overlayPiece(for: head, frames: unscaled)
        lock.unlock()
        if unscaled > 0 {
            let scaled = head.bytes + head.gained * format.bytesPerFrame
            state.gain.apply(to: scaled, frames: unscaled, format: format, target: gainTarget)
            overlay?.mix(into: scaled)
            head.gained += unscaled
        }
        let outcome = device.write(pointer, frames: frames)
        let deviceDelay = configuration.pace ? 0 : device.delayFrames()
        lock.lock()
        if let overlay { overlayMixed(overlay) }

        switch outcome {
        case .wrote(let count):
            clock.wrote(
                itemID: head.itemID, trackFrame: head.position + Int64(head.written), frames: count,
                sampleRate: format.sampleRate)
            head.written += count
            framesWrittenTotal &+= count
            state.written?.append(pointer, frames: count)
            if let left = state.pauseFadeToWrite { state.pauseFadeToWrite = max(0, left - count) }
            if let restore = state.unconfirmedRestore {
                state.unconfirmedRestore?.framesToGo -= count
                if restore.framesToGo <= count { confirmRestore(&state, itemID: head.itemID) }
            }
            let writtenAt = EngineLock.now()
            if configuration.pace {
                state.pacedFrames += count
                state.paceRoom -= count
                clock.holdPaced(state.pacedFrames, since: state.paceAnchor, sampleRate: format.sampleRate, now: writtenAt)
            } else {
                clock.heldFrames = Double(deviceDelay)
                clock.heldAt = writtenAt
                state.unheldWrites = count > 0 && deviceDelay == 0 ? state.unheldWrites + 1 : 0
                outputTakesBatches = state.unheldWrites >= 2
            }
            state.idleSince = nil
            if head.remainingFrames == 0 { finishChunk(head, &state) }
            if let requestedAt = playRequestedAt, count > 0 {
                playRequestedAt = nil
                post(.firstAudioWritten(itemID: head.itemID, latency: writtenAt - requestedAt))
            }
            crossBorders(now: writtenAt)
            announceTitleIfHeard(&state, now: writtenAt)
            noteFadeWritten(head, state, now: writtenAt)
        case .recovered:
            post(.underrun(itemID: head.itemID))
        case .lost(let reason):
            deviceWasLost(reason: reason, &state)
        }
    }

    /// Posts a stream title once the audio it belongs to is heard (checked at each write, so
    /// within one write's worth of audio).
    private func announceTitleIfHeard(_ state: inout OutputState, now: Double) {
        guard let pending = state.titleToAnnounce else { return }
        let heard = clock.heard(now: now)
        // Item ids grow: an earlier item still heard means the title's item is yet to come.
        guard heard.itemID > pending.itemID || heard.itemID == pending.itemID && heard.frame >= pending.frame else { return }
        state.titleToAnnounce = nil
        if heard.itemID == pending.itemID { post(.streamTitle(itemID: pending.itemID, pending.title)) }
    }

    /// The item after `after` was replaced once some of it was handed to the device: the device
    /// gives back what it holds after `after`'s last frame (unheard), and playback goes on from
    /// there with what is decoded next. A device that can no longer give it back (the border
    /// came too close meanwhile) plays what it holds; the chain still goes on with the new item.
    private func takeBack(after: Int, _ state: inout OutputState) {
        assertOn(.output)
        takeBackAfter = nil
        guard outputEpoch == epoch, let device = state.device,
            let frames = clock.framesWritten(after: after, now: clockNow)
        else { return }
        lock.unlock()
        let rewound = device.rewind(frames: Int(frames))
        let delay = configuration.pace ? 0 : device.delayFrames()
        lock.lock()
        guard rewound > 0 else { return }
        state.written?.dropLast(rewound)
        let now = EngineLock.now()
        clock.unwrite(Int64(rewound), now: configuration.pace ? clockNow : now)
        if configuration.pace {
            state.pacedFrames -= rewound
            state.paceRoom = 0
        } else {
            clock.heldFrames = Double(delay)
            clock.heldAt = now
        }
        lastWrittenItem = after
        lastEndedItem = after
        // The gain ramps from what is heard next; the taken-back item's ramp never sounded.
        state.endHandedOn = false
        lock.wakeDecoder()
    }

    /// Posts `started` for an item whose first sample is now heard (a gapless border crossed).
    func crossBorders(now: Double) {
        assertOn(.output)
        // A border of a run that a seek, load or stop has voided is never announced: the player
        // has moved on to what it asked for, and news of the old item would be taken as current.
        guard outputEpoch == epoch, let itemID = clock.advance(now: now) else { return }
        publishHeard(itemID, position: clock.position(now: now).seconds)
        post(.started(itemID: itemID))
    }

    /// Makes a freshly opened device the one this thread writes to.
    func adoptDevice(_ device: any OutputDevice, _ state: inout OutputState) {
        assertOn(.output)
        state.device = device
        state.released = false
        state.idleSince = nil
        state.devicePaused = false
        state.paceRoom = 0
        state.written =
            device.canRewind && configuration.fadesOnPause
            ? WrittenFrames(
                bytesPerFrame: device.format.bytesPerFrame,
                capacity: device.bufferFrames + device.periodFrames + paceLeadFrames(device) + pacePieceFrames(device),
                scratchFrames: GainStage.rampFrames(sampleRate: device.format.sampleRate))
            : nil
        deviceOpen = true
        let rate = Double(device.format.sampleRate)
        outputLeadSeconds =
            configuration.pace
            ? Double(paceLeadFrames(device) + pacePieceFrames(device)) / rate
            : Double(device.bufferFrames) / rate
        outputRewinds = device.canRewind
        // Paced, the thread sleeps on its condition and a take-back wakes it; otherwise it may be
        // in a write that blocks until a period has room.
        outputResponseSeconds = 0.002 + (configuration.pace ? 0 : Double(device.periodFrames) / rate)
    }

    func closeDevice(_ state: inout OutputState) {
        assertOn(.output)
        guard let device = state.device else { return }
        state.device = nil
        state.written = nil
        state.devicePaused = false
        state.unheldWrites = 0
        outputTakesBatches = false
        outputLeadSeconds = 0
        outputRewinds = false
        deviceOpen = false
        if deviceLostReason == nil { deviceFormat = nil }
        lock.unlock()
        device.close()
        lock.lock()
        lock.wakeAll()
    }
}
