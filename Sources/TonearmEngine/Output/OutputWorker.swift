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
///
/// What only this thread sees is its `OutputState`, made by `run` and passed down; what the
/// threads share is reached through `shared`, behind its lock.
struct OutputWorker {
    let shared: EngineControl
    let configuration: OutputConfiguration
    /// Opens devices off this thread, one at a time (`openDevice`).
    let opener = DeviceOpener()

    init(shared: EngineControl, configuration: OutputConfiguration) {
        self.shared = shared
        self.configuration = configuration
    }
}

extension OutputWorker {
    /// How long the pipe may stay empty while playing before buffering is reported.
    static let starvationGrace = 0.1

    func start() {
        NamedThread.start("tonearm-output") { [self] in run() }
    }

    func run() {
        var state = OutputState()
        shared.lock.lock()
        shared.recordThread(.output)
        while true {
            shared.resumePauseWaitersIfDone()
            shared.resumeFadeWaitersIfHeard(now: EngineLock.now())
            if shared.play.shuttingDown {
                closeDevice(&state)
                finishQueuedHooks(state)
                if state.hooksOpened, !configuration.onClose.isEmpty {
                    // Run here, not queued: the daemon exits once this thread has left.
                    state.hooksOpened = false
                    shared.lock.unlock()
                    runHook(.onClose, configuration.onClose)
                    shared.lock.lock()
                }
                shared.output.finished = true
                shared.lock.wakeAll()
                shared.lock.unlock()
                return
            }
            takeCommands(&state)
            if let request = state.takeBackAfter {
                state.takeBackAfter = nil
                if request.epoch == shared.epoch { takeBack(after: request.after, &state) }
                continue
            }
            dropVoidChunks()
            let head = shared.pipe.first
            if let head, head.isNetwork, head.runStart != nil && head.runStart != .advance || state.refilling,
                awaitFill(head, &state)
            {
                continue
            }
            if let head, let run = head.runStart, run != .advance {
                if let awaited = state.deviceAwaited, head.announcedReady, awaited.intent == shared.play.intent,
                    EngineLock.now() < state.nextReopenAt
                {
                    // The item waits for its device: the next attempt is due then, or at a play or pause.
                    shared.lock.waitOutput(untilMonotonic: state.nextReopenAt)
                    continue
                }
                beginRun(head, run, &state)
                continue
            }
            // The item that waited for its device was replaced or stopped.
            state.deviceAwaited = nil
            if shared.output.deviceLostReason != nil {
                reopenLostDevice(&state)
                continue
            }
            if shared.target == nil && head == nil {
                // Stopped: sleep until a command comes, letting the device go when it is time.
                idle(&state)
                continue
            }
            if !shared.play.requested {
                if state.unconfirmedRestore != nil {
                    // Paused before the restored device proved itself: it is back, not resuming.
                    state.unconfirmedRestore = nil
                    shared.post(.deviceRestored(itemID: shared.heardItemID ?? 0, resumes: false, intent: shared.play.intent))
                }
                switch fadeOutForPause(head, &state) {
                case .waited: continue
                case .writeFade: break
                case .pauseNow:
                    // Pausing the device releases the lock: anything that came meanwhile is looked at
                    // before sleeping, or its wake-up would be lost.
                    if pauseDevice(&state) { continue }
                    if state.refillRequested {
                        // Once paused: what the device holds unheard is dropped and decoded again.
                        state.refillRequested = false
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
                    shared.lock.waitOutput()
                }
                continue
            }
            if !shared.clock.consuming {
                startConsuming(&state)
                continue
            }
            if let head, head.runStart == .advance, head.format != shared.output.deviceFormat {
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

    /// Takes what callers queued for this thread into its own state. Lock held.
    func takeCommands(_ state: inout OutputState) {
        guard !shared.commands.output.isEmpty else { return }
        shared.commands.take(for: .output, into: &state.inbox)
        for command in state.inbox {
            switch command {
            case .setVolume(let factor): state.volume = factor
            case .fade(let request): state.fadeRequest = request
            case .duck(let request): state.duckRequest = request
            case .setReplayGain(let settings): state.replayGain = settings
            case .refillWhilePaused(let wanted): state.refillRequested = wanted
            case .takeBack(let after, let epoch): state.takeBackAfter = (after, epoch)
            case .forgetLostDevice: shared.output.deviceLostReason = nil
            case .setCrossfade: break
            }
        }
        state.inbox.removeAll(keepingCapacity: true)
    }

    // MARK: Chunks

    /// Recycles chunks at the head that belong to an older epoch or an abandoned item.
    func dropVoidChunks() {
        var dropped = false
        while let head = shared.pipe.first, head.epoch != shared.epoch || shared.items.abandoned.contains(head.itemID) {
            shared.pipe.popFirst()
            dropped = true
        }
        if dropped { shared.lock.wakeDecoder() }
    }

    /// A chunk was written out: release it, note an item's end, wake the decoder at half free.
    func finishChunk(_ head: PCMChunk, _ state: inout OutputState) {
        shared.assertOn(.output)
        if head.endsItem { state.lastEnded = (shared.epoch, head.itemID) }
        let halfEmptyBefore = shared.pipeIsHalfEmpty
        shared.pipe.popFirst()
        if !halfEmptyBefore && shared.pipeIsHalfEmpty { shared.lock.wakeDecoder() }
    }

    // MARK: Writing

    func write(_ head: PCMChunk, _ state: inout OutputState) {
        shared.assertOn(.output)
        guard let device = state.device else { return }
        if state.waitingReported {
            state.waitingReported = false
            shared.setTimeControl(.playing)
            shared.post(.bufferingEnded(itemID: head.itemID, intent: shared.play.intent))
        }
        let format = head.format
        var frames = min(head.remainingFrames, chunkFrames(device, state), state.pauseFadeToWrite ?? .max)
        if configuration.pace, device.canRewind, head.itemID != shared.clock.rest.itemID {
            // Past a border not yet heard: the next item's frames must stay within the device's
            // buffer, where a take-back can still reach them (`takeBack`).
            let ahead = Int(pacedAhead(state, rate: Double(format.sampleRate) * shared.speed, now: EngineLock.now()))
            let room = device.bufferFrames - ahead
            if room <= 0 && ahead > paceLeadFrames(device) {
                state.paceRoom = 0  // sleeps in `waitForPace` until the border comes nearer
                return
            }
            frames = min(frames, max(device.periodFrames, room))
        }
        let pointer = head.bytes + head.written * format.bytesPerFrame
        if shared.output.loudnessInForce?.itemID != head.itemID {
            let taken = shared.leveling(head.itemID)
            shared.output.loudnessInForce = (head.itemID, taken.measurement, taken.provisional)
        }
        let itemGain = state.replayGain.gain(
            tags: head.replayGain, loudness: shared.output.loudnessInForce?.measurement,
            prefersAlbum: head.prefersAlbumGain, provisional: shared.output.loudnessInForce?.provisional ?? false)
        shared.output.liveGainInForce = head.liveGainDB
        // A pause's fade-out goes on at the level it began with: a level asked with or after the
        // pause (the sleep timer's back to full, a duck lifted) is in force from the resume.
        if shared.play.requested && state.pauseFadeToWrite == nil {
            if state.fadeRequest.serial != state.fadeSerial {
                state.fadeSerial = state.fadeRequest.serial
                state.gain.fade(
                    from: state.fadeRequest.from, to: state.fadeRequest.to, frames: state.fadeRequest.frames(format, shared.speed))
            }
            if state.duckRequest.serial != state.duckSerial {
                state.duckSerial = state.duckRequest.serial
                state.gain.duck(to: state.duckRequest.to, frames: state.duckRequest.frames(format, shared.speed))
            }
        }
        let gainTarget = state.volume * GainStage.factor(decibels: itemGain.decibels + (head.liveGainDB ?? 0))
        shared.output.lastWrittenItem = head.itemID
        state.writingNetwork = head.isNetwork
        state.endHandedOn = false
        if let title = head.streamTitle {
            head.streamTitle = nil
            state.titleToAnnounce = (head.itemID, head.position, title)
        }
        let unscaled = head.written + frames - head.gained
        let overlay = overlayPiece(for: head, frames: unscaled)
        shared.lock.unlock()
        if unscaled > 0 {
            let scaled = head.bytes + head.gained * format.bytesPerFrame
            state.gain.apply(to: scaled, frames: unscaled, format: format, target: gainTarget)
            overlay?.mix(into: scaled)
            head.gained += unscaled
        }
        let outcome = device.write(pointer, frames: frames)
        let deviceDelay = configuration.pace ? 0 : device.delayFrames()
        shared.lock.lock()
        if let overlay { overlayMixed(overlay) }

        switch outcome {
        case .wrote(let count):
            shared.clock.wrote(
                itemID: head.itemID, trackFrame: head.position + Int64(head.written), frames: count,
                sampleRate: format.sampleRate)
            head.written += count
            shared.output.framesWritten &+= count
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
                shared.clock.holdPaced(state.pacedFrames, since: state.paceAnchor, sampleRate: format.sampleRate, now: writtenAt)
            } else {
                shared.clock.heldFrames = Double(deviceDelay)
                shared.clock.heldAt = writtenAt
                state.unheldWrites = count > 0 && deviceDelay == 0 ? state.unheldWrites + 1 : 0
                shared.output.takesBatches = state.unheldWrites >= 2
            }
            state.idleSince = nil
            if head.remainingFrames == 0 { finishChunk(head, &state) }
            if let requestedAt = shared.play.requestedAt, count > 0 {
                shared.play.requestedAt = nil
                shared.post(.firstAudioWritten(itemID: head.itemID, latency: writtenAt - requestedAt))
            }
            crossBorders(now: writtenAt)
            announceTitleIfHeard(&state, now: writtenAt)
            noteFadeWritten(head, state, now: writtenAt)
        case .recovered:
            shared.post(.underrun(itemID: head.itemID))
        case .lost(let reason):
            deviceWasLost(reason: reason, &state)
        }
    }

    /// Posts a stream title once the audio it belongs to is heard (checked at each write, so
    /// within one write's worth of audio).
    func announceTitleIfHeard(_ state: inout OutputState, now: Double) {
        guard let pending = state.titleToAnnounce else { return }
        let heard = shared.clock.heard(now: now)
        // Item ids grow: an earlier item still heard means the title's item is yet to come.
        guard heard.itemID > pending.itemID || heard.itemID == pending.itemID && heard.frame >= pending.frame else { return }
        state.titleToAnnounce = nil
        if heard.itemID == pending.itemID { shared.post(.streamTitle(itemID: pending.itemID, pending.title)) }
    }

    /// The item after `after` was replaced once some of it was handed to the device: the device
    /// gives back what it holds after `after`'s last frame (unheard), and playback goes on from
    /// there with what is decoded next. A device that can no longer give it back (the border
    /// came too close meanwhile) plays what it holds; the chain still goes on with the new item.
    func takeBack(after: Int, _ state: inout OutputState) {
        shared.assertOn(.output)
        guard shared.output.epoch == shared.epoch, let device = state.device,
            let frames = shared.clock.framesWritten(after: after, now: shared.clockNow)
        else { return }
        shared.lock.unlock()
        let rewound = device.rewind(frames: Int(frames))
        let delay = configuration.pace ? 0 : device.delayFrames()
        shared.lock.lock()
        guard rewound > 0 else { return }
        state.written?.dropLast(rewound)
        let now = EngineLock.now()
        shared.clock.unwrite(Int64(rewound), now: configuration.pace ? shared.clockNow : now)
        if configuration.pace {
            state.pacedFrames -= rewound
            state.paceRoom = 0
        } else {
            shared.clock.heldFrames = Double(delay)
            shared.clock.heldAt = now
        }
        shared.output.lastWrittenItem = after
        state.lastEnded = (shared.epoch, after)
        // The gain ramps from what is heard next; the taken-back item's ramp never sounded.
        state.endHandedOn = false
        shared.lock.wakeDecoder()
    }

    /// Posts `started` for an item whose first sample is now heard (a gapless border crossed).
    func crossBorders(now: Double) {
        shared.assertOn(.output)
        // A border of a run that a seek, load or stop has voided is never announced: the player
        // has moved on to what it asked for, and news of the old item would be taken as current.
        guard shared.output.epoch == shared.epoch, let itemID = shared.clock.advance(now: now) else { return }
        shared.publishHeard(itemID, position: shared.clock.position(now: now).seconds)
        shared.post(.started(itemID: itemID))
    }

    /// Makes a freshly opened device the one this thread writes to.
    func adoptDevice(_ device: any OutputDevice, _ state: inout OutputState) {
        shared.assertOn(.output)
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
        shared.output.deviceOpen = true
        let rate = Double(device.format.sampleRate)
        shared.output.leadSeconds =
            configuration.pace
            ? Double(paceLeadFrames(device) + pacePieceFrames(device)) / rate
            : Double(device.bufferFrames) / rate
        shared.output.rewinds = device.canRewind
        // Paced, the thread sleeps on its condition and a take-back wakes it; otherwise it may be
        // in a write that blocks until a period has room.
        shared.output.responseSeconds = 0.002 + (configuration.pace ? 0 : Double(device.periodFrames) / rate)
    }

    func closeDevice(_ state: inout OutputState) {
        shared.assertOn(.output)
        guard let device = state.device else { return }
        state.device = nil
        state.written = nil
        state.devicePaused = false
        state.unheldWrites = 0
        shared.output.takesBatches = false
        shared.output.leadSeconds = 0
        shared.output.rewinds = false
        shared.output.deviceOpen = false
        if shared.output.deviceLostReason == nil { shared.output.deviceFormat = nil }
        shared.lock.unlock()
        device.close()
        shared.lock.lock()
        shared.lock.wakeAll()
    }
}
