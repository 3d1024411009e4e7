import Foundation

/// Pausing and resuming the device, on the output thread. A pause that never clicks
/// (`output.fade_on_pause`): the output writes 5 ms more, fading to silence, and pauses the
/// device once that fade is heard. A device that can take frames back gives back all it holds
/// but the next 10 ms and the fade goes there (`fadeOutFromPlayingPoint`); on another the fade
/// goes after what it holds (at most `buffer_ms` later). The position runs on until then and
/// stops where the fade ends; a play resumes from there, fading in over 5 ms (`startConsuming`).
/// A clocked device (ALSA, not paced) is given 10 ms of silence after the fade, so that it is
/// still running, on silence, when it is paused in place: run dry it would underrun, and a
/// device that stopped is dropped and refilled (a live stream joined again) instead.
extension OutputWorker {
    /// Zeros for that silence: 64 KiB, enough for 10 ms of 8 channels of 32 bits at 192 kHz.
    /// Never written after it is made, so shared without a lock.
    nonisolated(unsafe) private static let silence: UnsafeMutableRawPointer = {
        let bytes = UnsafeMutableRawPointer.allocate(byteCount: 65_536, alignment: 16)
        bytes.initializeMemory(as: UInt8.self, repeating: 0, count: 65_536)
        return bytes
    }()

    enum PauseFadeStep {
        /// The fade's frames are written next, as while playing.
        case writeFade
        /// The output slept until the fade is heard (or a command came).
        case waited
        /// Nothing (more) to fade: the device pauses now.
        case pauseNow
    }

    /// One step of a pause: output thread, lock held, pause asked (`play.requested` false).
    func fadeOutForPause(_ head: PCMChunk?, _ state: inout OutputState) -> PauseFadeStep {
        shared.assertOn(.output)
        // A network item that ran dry holds nothing to fade: it pauses at once.
        guard configuration.fadesOnPause, shared.clock.consuming, let device = state.device, shared.output.deviceLostReason == nil,
            !state.refilling
        else {
            state.pauseFadeToWrite = nil
            return .pauseNow
        }
        if state.pauseFadeToWrite == nil {
            if state.gain.isSilenced { return .pauseNow }
            if fadeOutFromPlayingPoint(device, &state) { return .waited }
            state.pauseFadePadded = configuration.pace
            let frames = GainStage.rampFrames(sampleRate: device.format.sampleRate)
            // Frames a short write left scaled and unwritten go out first, as they are; the ramp
            // starts with the first frame scaled from now on.
            let scaledAhead = head.map { $0.gained - $0.written } ?? 0
            state.pauseFadeToWrite = scaledAhead + frames
            state.gain.mute(frames: frames)
            // Where it will stand, when the whole fade comes from this chunk (at a border, or
            // with the pipe running dry, the answer waits for the fade to be heard).
            if let head, head.runStart == nil, head.frames - head.gained >= frames {
                shared.play.pauseStandsAt = (shared.epoch, head.itemID, head.position + Int64(head.gained + frames), head.format.sampleRate)
                shared.resumePauseWaitersIfDone()
            }
        }
        if let left = state.pauseFadeToWrite, left > 0, let head, head.remainingFrames > 0,
            head.runStart == nil || (head.runStart == .advance && head.format == shared.output.deviceFormat)
        {
            return .writeFade
        }
        // The fade is written (or what follows cannot be written now: the end of the queue, an
        // item that needs the device reopened): the pause stands where the device runs out.
        if !state.pauseFadePadded {
            state.pauseFadePadded = true
            padWithSilence(device, &state)
            return .waited
        }
        let now = EngineLock.now()
        let due = shared.clock.writtenHeardAt ?? now
        shared.play.pauseRequestedAt = due
        if now < due {
            shared.lock.waitOutput(untilMonotonic: due)
            return .waited
        }
        state.pauseFadeToWrite = nil
        return .pauseNow
    }

    /// On a device that can take frames back: takes back what it holds but the next 10 ms (time
    /// enough for this thread to write again) and writes the 5 ms fade in their place, made from
    /// the copy of what was written (`OutputState.written`). The pause is heard within about
    /// 15 ms, not after all the device holds (up to `buffer_ms`, or the pace's 350 ms). The pause
    /// stands where the fade ends, and the decoder starts again from there (`refillFrom`).
    /// Returns false, and the fade goes after what the device holds, when the device cannot give
    /// the frames back, when the fade would cross a border, or an announcement is mixed in.
    private func fadeOutFromPlayingPoint(_ device: any OutputDevice, _ state: inout OutputState) -> Bool {
        guard let written = state.written, !state.writingNetwork, shared.overlay.ring == nil else { return false }
        let format = device.format
        let now = configuration.pace ? shared.clockNow : EngineLock.now()
        let ramp = GainStage.rampFrames(sampleRate: format.sampleRate)
        let back = Int(shared.clock.held(now: now)) - format.sampleRate / 100
        guard back > ramp, back <= written.count, ramp <= written.scratchFrames,
            let from = shared.clock.written(at: shared.clock.deviceWritten - Int64(back)), from.runLeft >= ramp,
            shared.knownItem(from.itemID) != nil
        else { return false }
        shared.lock.unlock()
        let rewound = device.rewind(frames: back)
        shared.lock.lock()
        guard rewound == back else { return false }
        let fade = written.copy(back: back, frames: ramp)
        written.dropLast(back)
        shared.clock.unwrite(Int64(back), now: now)
        if configuration.pace { state.pacedFrames -= back }
        var stage = GainStage()
        stage.mute(frames: ramp)
        stage.apply(to: fade, frames: ramp, format: format, target: 1)
        // Resuming fades in from silence, from where the fade ends.
        state.gain.mute(frames: 0)
        state.pauseFadeToWrite = 0
        state.pauseFadePadded = configuration.pace
        let end = (from.itemID, from.frame + Int64(ramp), from.sampleRate)
        state.refillFrom = end
        shared.play.pauseStandsAt = (shared.epoch, end.0, end.1, end.2)
        shared.output.lastWrittenItem = from.itemID
        shared.resumePauseWaitersIfDone()
        shared.lock.unlock()
        let outcome = device.write(fade, frames: ramp)
        let delay = configuration.pace ? 0 : device.delayFrames()
        shared.lock.lock()
        switch outcome {
        case .wrote(let count):
            shared.clock.wrote(itemID: from.itemID, trackFrame: from.frame, frames: count, sampleRate: from.sampleRate)
            written.append(fade, frames: count)
            let writtenAt = EngineLock.now()
            if configuration.pace {
                state.pacedFrames += count
                shared.clock.holdPaced(state.pacedFrames, since: state.paceAnchor, sampleRate: format.sampleRate, now: writtenAt)
            } else {
                shared.clock.heldFrames = Double(delay)
                shared.clock.heldAt = writtenAt
            }
        case .recovered:
            shared.post(.underrun(itemID: from.itemID))
        case .lost(let reason):
            deviceWasLost(reason: reason, &state)
        }
        return true
    }

    /// Writes 10 ms of silence after what the device holds, outside the clock (no item's frames).
    /// Releases the lock around the write.
    private func padWithSilence(_ device: any OutputDevice, _ state: inout OutputState) {
        let frames = min(device.format.sampleRate / 100, 65_536 / device.format.bytesPerFrame)
        shared.lock.unlock()
        let outcome = device.write(Self.silence, frames: frames)
        shared.lock.lock()
        switch outcome {
        case .wrote(let count): state.written?.append(Self.silence, frames: count)
        case .lost(let reason): deviceWasLost(reason: reason, &state)
        case .recovered: break
        }
    }

    // MARK: The device's pause and resume

    /// Returns whether it did anything (and so released the lock for a while).
    func pauseDevice(_ state: inout OutputState) -> Bool {
        shared.assertOn(.output)
        guard shared.clock.consuming, let device = state.device else { return false }
        // With pacing the clock is ours: it stops when the pause was asked. A real device
        // played on until now.
        let now = configuration.pace ? shared.clockNow : EngineLock.now()
        // Rounded up: the heard frame is the whole frames written minus what is held, rounded
        // down, so this keeps the position a client read a moment ago to the frame. At or past
        // the moment all written is heard, nothing is held (the clock's arithmetic on a large
        // uptime may leave a trace of a frame, which rounding up would make a whole one).
        let allHeard = shared.clock.writtenHeardAt.map { now >= $0 } ?? false
        shared.clock.heldFrames = allHeard ? 0 : shared.clock.held(now: now).rounded(.up)
        shared.clock.heldAt = now
        shared.clock.consuming = false
        shared.output.stoppedConsumingAt = now
        shared.lock.unlock()
        let inPlace = device.pauseNow()
        shared.lock.lock()
        state.devicePaused = inPlace
        if let from = state.refillFrom {
            // The fade came from the copy; what the pipe holds follows what was taken back.
            state.refillFrom = nil
            rewind(to: from, now: now)
        } else if !inPlace {
            rewindToHeard(now: now)
        }
        shared.setTimeControl(.paused)
        return true
    }

    func startConsuming(_ state: inout OutputState) {
        shared.assertOn(.output)
        if state.devicePaused, let device = state.device {
            shared.lock.unlock()
            device.resume()
            shared.lock.lock()
            state.devicePaused = false
        } else {
            // A device that dropped on pause lost what it held; the pipe restarts at what was heard.
            shared.clock.heldFrames = 0
        }
        state.gain.settle()
        if state.gain.isMuted, let device = state.device {
            // Resuming what a pause faded out: it fades in again from where it stopped.
            state.gain.unmute(frames: GainStage.rampFrames(sampleRate: device.format.sampleRate))
        }
        state.idleSince = nil
        shared.clock.consuming = true
        shared.clock.heldAt = EngineLock.now()
        state.paceAnchor = shared.clock.heldAt
        state.pacedFrames = Int(shared.clock.heldFrames.rounded())
        state.paceRoom = 0
        state.waitingReported = false
        // A device back from a loss is not playing until it proved itself (`confirmRestore`).
        guard state.unconfirmedRestore == nil else { return }
        shared.setTimeControl(.playing)
    }
}
