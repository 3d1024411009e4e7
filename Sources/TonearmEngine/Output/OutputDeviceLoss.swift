import Foundation

/// What the output thread does when its device goes away (a USB DAC unplugged or powered off)
/// and until it comes back. Both run on the output thread with the lock held, and release it
/// only around device calls. There is no polling: between attempts the thread sleeps on its
/// condition until the next attempt is due or a command wakes it.
extension OutputWorker {
    var reopenInterval: Double { Double(max(configuration.reopenIntervalMilliseconds, 100)) / 1000 }

    /// The device dropped what it held (it was lost, or it cannot pause in place), so those frames
    /// were never heard: playback stands at what was, and the decoder starts again from there.
    /// A caller's command whose first chunk has not been reached yet already decides where
    /// playback goes on: it is kept. Lock held.
    func rewindToHeard(now: Double) {
        shared.lock.assertHeld()
        rewind(to: shared.clock.heard(now: now), now: now)
    }

    /// Playback stands at `heard`, and the decoder starts again from there (see `rewindToHeard`).
    func rewind(to heard: (itemID: Int, frame: Int64, sampleRate: Int), now: Double) {
        shared.clock.park(itemID: heard.itemID, frame: heard.frame, sampleRate: heard.sampleRate, now: now)
        shared.clock.consuming = false
        guard shared.output.epoch == shared.epoch, let item = shared.knownItem(heard.itemID) else { return }
        shared.target = DecodeTarget(
            item: item, startSeconds: Double(heard.frame) / Double(heard.sampleRate),
            runStart: .seek(token: EngineControl.internalSeekToken))
        shared.beginEpoch()
    }

    /// The device failed for good: pause at what was heard, close the handle, schedule a reopen.
    /// A device that came back unannounced and failed again the same way, with nothing asked
    /// since, is still the loss already announced: it is not announced again (once per change).
    func deviceWasLost(reason: String, _ state: inout OutputState) {
        shared.assertOn(.output)
        let now = EngineLock.now()
        let unconfirmed = state.unconfirmedRestore
        state.unconfirmedRestore = nil
        let sameLossAgain =
            unconfirmed != nil && state.announcedLoss?.reason == reason
            && state.announcedLoss?.intent == shared.play.intent
        if sameLossAgain, let from = unconfirmed?.from {
            // The device never worked since it came back: nothing it took was heard.
            rewind(to: from, now: now)
        } else {
            rewindToHeard(now: now)
        }
        shared.play.resumeOnRestore = shared.play.requested && configuration.resumeAfterInterruption
        shared.play.requested = false
        shared.output.deviceLostReason = reason
        state.nextReopenAt = now + reopenInterval
        let heard = shared.clock.position(now: now)
        if !sameLossAgain {
            state.announcedLoss = (reason, shared.play.intent)
            shared.post(
                .deviceLost(
                    itemID: heard.itemID,
                    EngineFailure(.deviceLost, "audio device '\(configuration.device)' lost: \(reason)"),
                    intent: shared.play.intent))
        }
        shared.setTimeControl(.paused)
        closeDevice(&state)
    }

    /// One step while the device is gone: sleep until the next attempt (or a play request, which
    /// tries at once), then try to open the device again in the format it had.
    func reopenLostDevice(_ state: inout OutputState) {
        shared.assertOn(.output)
        if !shared.play.requested, EngineLock.now() < state.nextReopenAt {
            shared.lock.waitOutput(untilMonotonic: state.nextReopenAt)
            return
        }
        guard let format = shared.output.deviceFormat else {
            shared.output.deviceLostReason = nil
            return
        }
        var reopened: (any OutputDevice)?
        var failure = ""
        switch openDevice(format, &state) {
        case .success(let output) where output.format == format:
            reopened = output
        case .success(let output):
            // The decoder converts to the format the device had; another one cannot be played.
            failure = "audio device '\(configuration.device)' came back as \(output.format), not \(format)"
            output.close()
        case .failure(let error):
            failure = error.message
        }
        let itemID = shared.heardItemID ?? 0
        if let reopened {
            adoptDevice(reopened, &state)
            shared.output.deviceLostReason = nil
            let resume = shared.play.resumeOnRestore || shared.play.requested
            shared.play.resumeOnRestore = false
            shared.play.requested = resume
            if resume {
                // Announced once the device took a buffer's worth (see `unconfirmedRestore`);
                // until then it says nothing, so a device failing the same way each time is quiet.
                let now = EngineLock.now()
                state.unconfirmedRestore = (reopened.bufferFrames + reopened.periodFrames, shared.clock.heard(now: now))
            } else {
                shared.post(.deviceRestored(itemID: itemID, resumes: false, intent: shared.play.intent))
            }
            shared.lock.wakeAll()
            return
        }
        shared.output.deviceLostReason = failure
        state.nextReopenAt = EngineLock.now() + reopenInterval
        if shared.play.requested {
            // Play was asked while the device is away: say so, and play once it is back.
            shared.play.requested = false
            shared.play.resumeOnRestore = true
            shared.post(.deviceLost(itemID: itemID, EngineFailure(.deviceLost, failure), intent: shared.play.intent))
        }
    }

    /// The device came back and took a buffer's worth (or played to the end): announce it.
    func confirmRestore(_ state: inout OutputState, itemID: Int) {
        shared.assertOn(.output)
        guard state.unconfirmedRestore != nil else { return }
        state.unconfirmedRestore = nil
        state.announcedLoss = nil
        shared.post(.deviceRestored(itemID: itemID, resumes: true, intent: shared.play.intent))
        if shared.play.requested {
            shared.setTimeControl(.playing)
        }
    }

    /// `waitForDevice`: a loaded item whose device is missing or busy is announced ready once
    /// and waits, as if its device were lost; a play asked meanwhile is answered with the loss
    /// and resumes when the device appears. The run's first chunk stays at the pipe's head, so
    /// the next attempt (see `run`) prepares the device exactly as a load does.
    func awaitDevice(for head: PCMChunk, _ failure: EngineFailure, _ state: inout OutputState) {
        shared.assertOn(.output)
        let now = EngineLock.now()
        state.deviceAwaited = (failure.message, shared.play.intent)
        state.nextReopenAt = now + reopenInterval
        if !head.announcedReady {
            head.announcedReady = true
            shared.clock.park(itemID: head.itemID, frame: head.position, sampleRate: head.format.sampleRate, now: now)
            shared.publishHeard(head.itemID, position: Double(head.position) / Double(head.format.sampleRate))
            shared.publish { $0.status = .readyToPlay }
            shared.setTimeControl(.paused)
            shared.post(.ready(itemID: head.itemID))
        }
        if shared.play.requested {
            shared.play.requested = false
            shared.play.resumeOnRestore = true
            shared.post(.deviceLost(itemID: head.itemID, EngineFailure(.deviceLost, failure.message), intent: shared.play.intent))
        }
    }
}
