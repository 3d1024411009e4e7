import Foundation
import TonearmMedia
import TonearmSync

/// Where a run starts (a load, a seek, a refill, an advance into another format): the output
/// thread prepares or reopens the device and announces the run.
extension OutputWorker {
    // MARK: Runs

    /// The first chunk after a load or a seek: what the device holds is void, the device must be
    /// open in the chunk's format, and the news is posted. Runs paused or playing.
    func beginRun(_ head: PCMChunk, _ run: RunStart, _ state: inout OutputState) {
        shared.assertOn(.output)
        let now = EngineLock.now()
        state.idleSince = nil
        if state.device != nil, shared.output.deviceLostReason == nil {
            shared.lock.unlock()
            state.device?.discard()
            shared.lock.lock()
            state.devicePaused = false
        }
        shared.clock.park(itemID: head.itemID, frame: head.position, sampleRate: head.format.sampleRate, now: now)
        shared.clock.consuming = false
        shared.output.stoppedConsumingAt = now
        shared.output.awaitsFill = false
        state.refilling = false
        state.titleToAnnounce = nil
        state.pauseFadeToWrite = nil
        state.refillFrom = nil
        // A new sound (a load, a seek) starts at full level; a refill goes on from a pause's silence.
        if run != .seek(token: EngineControl.internalSeekToken) { state.gain.unmute(frames: 0) }
        // A live stream rejoined while buffering was reported: its first write reports the end.
        if run != .seek(token: EngineControl.internalSeekToken) { state.waitingReported = false }
        // While the device is away a seek just moves the position; a load tries the device now.
        // A released device opens again for a load, or when play is asked; not for a paused seek.
        let needsDevice =
            (shared.output.deviceLostReason == nil || run == .opened) && (!state.released || shared.play.requested || run == .opened)
        if needsDevice && (shared.output.deviceFormat != head.format || state.device == nil) {
            guard prepareDevice(for: head, run, &state) else { return }
        }
        head.runStart = nil
        shared.output.epoch = head.epoch
        state.lastEnded = nil
        let position = Double(head.position) / Double(head.format.sampleRate)
        shared.publishHeard(head.itemID, position: position)
        if head.announcedReady {
            // Its device appeared: it was announced ready (and interrupted, if play was asked).
            state.deviceAwaited = nil
            let resume = shared.play.resumeOnRestore || shared.play.requested
            shared.play.resumeOnRestore = false
            shared.play.requested = resume
            if resume { shared.play.requestedAt = EngineLock.now() }
            shared.post(.deviceRestored(itemID: head.itemID, resumes: resume, intent: shared.play.intent))
            return
        }
        switch run {
        case .opened:
            shared.publish { $0.status = .readyToPlay }
            shared.setTimeControl(.paused)
            shared.post(.ready(itemID: head.itemID))
        case .seek(let token):
            shared.post(.seekCompleted(itemID: head.itemID, token: token, position: position))
        case .advance:
            break
        }
    }

    /// Opens the device in `head`'s format (closing it first if open in another). Returns false
    /// when that failed (the item failed, or the decoder redoes it in the granted format).
    func prepareDevice(for head: PCMChunk, _ run: RunStart, _ state: inout OutputState) -> Bool {
        shared.assertOn(.output)
        closeDevice(&state)
        let requested = head.format
        switch openDevice(requested, &state) {
        case .failure(let failure)
        where configuration.waitForDevice && failure.kind == .deviceUnavailable
            && run == .opened && head.epoch == shared.epoch:
            awaitDevice(for: head, failure, &state)
            return false
        case .failure(let failure):
            shared.output.deviceLostReason = nil
            if head.epoch == shared.epoch {
                // The item cannot be heard: it fails, and nothing more is decoded.
                shared.target = nil
                shared.next = nil
                shared.play.requested = false
                shared.play.resumeOnRestore = false
                shared.beginEpoch()
                shared.publish { $0.status = .failed(failure) }
                shared.post(.failed(itemID: head.itemID, failure))
            }
            return false
        case .success(let device):
            adoptDevice(device, &state)
            shared.output.deviceFormat = device.format
            state.devicePaused = false
            if shared.output.deviceLostReason != nil {
                // A load while the device was away brought it back.
                shared.output.deviceLostReason = nil
            }
            if device.format != requested, head.epoch == shared.epoch {
                // The device plays another format: the decoder converts to it, from this run's start.
                shared.output.grantedFormats[requested] = device.format
                if let item = shared.knownItem(head.itemID) {
                    shared.target = DecodeTarget(
                        item: item, startSeconds: Double(head.position) / Double(requested.sampleRate),
                        runStart: run)
                }
                shared.beginEpoch()
                return false
            }
            return true
        }
    }

    /// Before an item of another format: play out what the device holds (the previous item is
    /// heard to its last sample), then reopen. Returns true when the loop should go round again.
    func reopenForAdvance(_ head: PCMChunk, _ state: inout OutputState) -> Bool {
        shared.assertOn(.output)
        let now = EngineLock.now()
        if let device = state.device {
            if waitUntilPlayedOut(device, state, now: now) { return true }
            let myEpoch = shared.epoch
            shared.lock.unlock()
            device.drain()
            shared.lock.lock()
            if shared.epoch != myEpoch || !shared.play.requested { return true }
        }
        // The previous item is heard to its last sample; the next one's first write starts a new
        // segment, and crossing into it posts `started` as at a gapless border.
        crossBorders(now: .infinity)
        let heard = shared.clock.heard(now: .infinity)
        shared.clock.park(itemID: heard.itemID, frame: heard.frame, sampleRate: heard.sampleRate, now: EngineLock.now())
        shared.clock.consuming = false
        _ = prepareDevice(for: head, .advance, &state)
        return true
    }
}
