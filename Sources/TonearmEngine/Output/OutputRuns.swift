import Foundation
import TonearmMedia
import TonearmSync

/// Where a run starts (a load, a seek, a refill, an advance into another format): the output
/// thread prepares or reopens the device and announces the run.
extension EngineControl {
    // MARK: Runs

    /// The first chunk after a load or a seek: what the device holds is void, the device must be
    /// open in the chunk's format, and the news is posted. Runs paused or playing.
    func beginRun(_ head: PCMChunk, _ run: RunStart, _ state: inout OutputState) {
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
    func prepareDevice(for head: PCMChunk, _ run: RunStart, _ state: inout OutputState) -> Bool {
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
    func reopenForAdvance(_ head: PCMChunk, _ state: inout OutputState) -> Bool {
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
}
