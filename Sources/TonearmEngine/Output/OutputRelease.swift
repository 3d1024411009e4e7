import Foundation

/// Letting the device sleep (`output.release_after_s`): once nothing has played for that long
/// (stopped, paused, the queue ended) the output thread closes the device, so a DAC, and the
/// amplifier `output.on_close` switches off, may sleep; the next play opens it again. The wait
/// is one timed sleep on the output condition, then none: an idle engine makes no wake-ups.
extension OutputWorker {
    /// Nothing to play: sleeps until a command comes, or until the device has been idle long
    /// enough to be released. Output thread, lock held.
    func idle(_ state: inout OutputState) {
        shared.assertOn(.output)
        guard let after = configuration.releaseAfterSeconds, state.device != nil || state.hooksOpened else {
            shared.lock.waitOutput()
            return
        }
        let now = EngineLock.now()
        let since = state.idleSince ?? now
        state.idleSince = since
        if now >= since + after {
            releaseDevice(&state)
        } else {
            shared.lock.waitOutput(untilMonotonic: since + after)
        }
    }

    /// Closes the device for idleness. Paused mid-item, what the device held unheard is gone
    /// with it: playback stands at what was heard, and the decoder refills from there (the
    /// device opens again only when play is asked). A device that held nothing unheard (an
    /// item loaded and not played yet, a pause whose fade was heard to its end) took nothing
    /// with it: the pipe keeps what was decoded ahead and play goes on from it, nothing decoded
    /// again (a decoder sent back to the first sample does not give it again sample for sample).
    private func releaseDevice(_ state: inout OutputState) {
        shared.assertOn(.output)
        state.idleSince = nil
        if state.device != nil {
            let now = EngineLock.now()
            if shared.chainEndedAfter == nil && shared.target != nil && shared.clock.held(now: now) > 0 { rewindToHeard(now: now) }
            state.released = true
            closeDevice(&state)
            shared.post(.deviceReleased(itemID: shared.heardItemID ?? 0))
        }
        releaseHooks(&state)
    }

    /// Play was asked while the device is released: opens it in the format of what is heard
    /// next. A device that grants another format has the decoder convert from there on; one that
    /// cannot be opened is a lost device (playback waits, and resumes once it is back).
    func reacquireDevice(for head: PCMChunk, _ state: inout OutputState) {
        shared.assertOn(.output)
        let wanted = head.format
        let myEpoch = shared.epoch
        let result = openDevice(wanted, &state)
        switch result {
        case .success(let device):
            adoptDevice(device, &state)
            shared.output.deviceFormat = device.format
            guard device.format != wanted else { return }
            shared.output.grantedFormats[wanted] = device.format
            if shared.epoch == myEpoch, let item = shared.knownItem(head.itemID) {
                shared.target = DecodeTarget(
                    item: item, startSeconds: Double(head.position + Int64(head.written)) / Double(wanted.sampleRate),
                    runStart: .seek(token: EngineControl.internalSeekToken))
                shared.beginEpoch()
            }
        case .failure(let failure):
            guard shared.epoch == myEpoch else { return }
            shared.output.deviceFormat = wanted
            shared.output.deviceLostReason = failure.message
            state.nextReopenAt = EngineLock.now() + reopenInterval
            if shared.play.requested {
                shared.play.requested = false
                shared.play.resumeOnRestore = true
                shared.post(.deviceLost(itemID: head.itemID, EngineFailure(.deviceLost, failure.message), intent: shared.play.intent))
            }
        }
    }
}
