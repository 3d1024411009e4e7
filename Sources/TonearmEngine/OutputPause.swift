import Foundation

/// Pausing and resuming the device, on the output thread. A pause that never clicks
/// (`output.fade_on_pause`): the output writes 5 ms more, fading to silence, after what the
/// device holds, and pauses the device once that fade is heard. The position runs on until then
/// and stops where the fade ends; a play resumes from there, fading in over 5 ms
/// (`startConsuming`). The pause takes effect what the device holds later (at most `buffer_ms`).
/// A clocked device (ALSA, not paced) is given 10 ms of silence after the fade, so that it is
/// still running, on silence, when it is paused in place: run dry it would underrun, and a
/// device that stopped is dropped and refilled (a live stream joined again) instead.
extension EngineControl {
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

    /// One step of a pause: output thread, lock held, pause asked (`playRequested` false).
    func fadeOutForPause(_ head: PCMChunk?, _ state: inout OutputState) -> PauseFadeStep {
        assertOn(.output)
        // A network item that ran dry holds nothing to fade: it pauses at once.
        guard configuration.fadesOnPause, clock.consuming, let device = state.device, deviceLostReason == nil,
              !state.refilling else {
            state.pauseFadeToWrite = nil
            return .pauseNow
        }
        if state.pauseFadeToWrite == nil {
            if state.gain.isSilenced { return .pauseNow }
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
                pauseStandsAt = (epoch, head.itemID, head.position + Int64(head.gained + frames), head.format.sampleRate)
                resumePauseWaitersIfDone()
            }
        }
        if let left = state.pauseFadeToWrite, left > 0, let head, head.remainingFrames > 0,
           head.runStart == nil || (head.runStart == .advance && head.format == deviceFormat) {
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
        let due = clock.writtenHeardAt ?? now
        pauseRequestedAt = due
        if now < due {
            lock.waitOutput(untilMonotonic: due)
            return .waited
        }
        state.pauseFadeToWrite = nil
        return .pauseNow
    }

    /// Writes 10 ms of silence after what the device holds, outside the clock (no item's frames).
    /// Releases the lock around the write.
    private func padWithSilence(_ device: any OutputDevice, _ state: inout OutputState) {
        let frames = min(device.format.sampleRate / 100, 65_536 / device.format.bytesPerFrame)
        lock.unlock()
        let outcome = device.write(Self.silence, frames: frames)
        lock.lock()
        if case .lost(let reason) = outcome { deviceWasLost(reason: reason, &state) }
    }

    // MARK: The device's pause and resume

    /// Returns whether it did anything (and so released the lock for a while).
    func pauseDevice(_ state: inout OutputState) -> Bool {
        assertOn(.output)
        guard clock.consuming, let device = state.device else { return false }
        // With pacing the clock is ours: it stops when the pause was asked. A real device
        // played on until now.
        let now = configuration.pace ? clockNow : EngineLock.now()
        // Rounded up: the heard frame is the whole frames written minus what is held, rounded
        // down, so this keeps the position a client read a moment ago to the frame. At or past
        // the moment all written is heard, nothing is held (the clock's arithmetic on a large
        // uptime may leave a trace of a frame, which rounding up would make a whole one).
        let allHeard = clock.writtenHeardAt.map { now >= $0 } ?? false
        clock.heldFrames = allHeard ? 0 : clock.held(now: now).rounded(.up)
        clock.heldAt = now
        clock.consuming = false
        stoppedConsumingAt = now
        lock.unlock()
        let inPlace = device.pauseNow()
        lock.lock()
        state.devicePaused = inPlace
        if !inPlace { rewindToHeard(now: now) }
        setTimeControl(.paused)
        return true
    }

    func startConsuming(_ state: inout OutputState) {
        assertOn(.output)
        if state.devicePaused, let device = state.device {
            lock.unlock()
            device.resume()
            lock.lock()
            state.devicePaused = false
        } else {
            // A device that dropped on pause lost what it held; the pipe restarts at what was heard.
            clock.heldFrames = 0
        }
        state.gain.settle()
        if state.gain.isMuted, let device = state.device {
            // Resuming what a pause faded out: it fades in again from where it stopped.
            state.gain.unmute(frames: GainStage.rampFrames(sampleRate: device.format.sampleRate))
        }
        state.idleSince = nil
        clock.consuming = true
        clock.heldAt = EngineLock.now()
        state.paceAnchor = clock.heldAt
        state.pacedFrames = Int(clock.heldFrames.rounded())
        state.paceRoom = 0
        state.waitingReported = false
        // A device back from a loss is not playing until it proved itself (`confirmRestore`).
        guard state.unconfirmedRestore == nil else { return }
        setTimeControl(.playing)
    }
}
