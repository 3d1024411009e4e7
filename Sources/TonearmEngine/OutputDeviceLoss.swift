import Foundation

/// What the output thread does when its device goes away (a USB DAC unplugged or powered off)
/// and until it comes back. Both run on the output thread with the lock held, and release it
/// only around device calls. There is no polling: between attempts the thread sleeps on its
/// condition until the next attempt is due or a command wakes it.
extension EngineRuntime {
    /// Marks the seek the engine makes itself, so no caller mistakes its completion for its own.
    static let internalSeekToken = Int.min

    var reopenInterval: Double { Double(max(configuration.reopenIntervalMilliseconds, 100)) / 1000 }

    /// The device dropped what it held (it was lost, or it cannot pause in place), so those frames
    /// were never heard: the position goes back to what was, and the decoder refills the ring
    /// from there. A caller's own pending seek already decides where playback goes on.
    /// Returns the heard frame.
    @discardableResult
    func rewindToHeard(_ session: ItemSession, format: PCMFormat, now: Double) -> Int64 {
        let heard = session.basePosition + session.framesWritten
            - Int64(session.heldFrames(now: now, speed: speed).rounded())
        session.consuming = false
        session.basePosition = heard
        session.framesWritten = 0
        session.heldFrames = 0
        session.heldAt = now
        if session.pendingSeek == nil {
            session.pendingSeek = (Double(heard) / Double(format.sampleRate), Self.internalSeekToken)
            session.endReported = false
            lock.wakeDecoder()
        }
        return heard
    }

    /// The device failed for good: pause at what was heard, close the handle, and schedule a reopen.
    func deviceWasLost(_ session: ItemSession, _ output: AlsaOutput, format: PCMFormat, reason: String) {
        let now = EngineLock.now()
        let heard = rewindToHeard(session, format: format, now: now)
        session.resumeOnRestore = session.playRequested && configuration.resumeAfterInterruption
        session.playRequested = false
        session.deviceLostReason = reason
        session.nextReopenAt = now + reopenInterval
        session.output = nil
        post(for: session, .deviceLost(itemID: session.id,
                                       EngineFailure(.deviceLost, "audio device '\(output.device)' lost: \(reason)")))
        publish(for: session) {
            $0.timeControlStatus = .paused
            $0.currentTime = Double(heard) / Double(format.sampleRate)
        }
        lock.unlock()
        output.close()
        lock.lock()
    }

    /// One step while the device is gone: sleep until the next attempt (or a play request, which
    /// tries at once), then try to open the device again with the item's format.
    func reopenLostDevice(_ session: ItemSession, format: PCMFormat) {
        if !session.playRequested, EngineLock.now() < session.nextReopenAt {
            lock.waitOutput(untilMonotonic: session.nextReopenAt)
            return
        }
        lock.unlock()
        var reopened: AlsaOutput?
        var failure = ""
        do {
            let output = try AlsaOutput.open(device: configuration.device, requested: format,
                                             bufferMilliseconds: configuration.bufferMilliseconds)
            // The decoder converts to the format granted at load; another one cannot be played.
            if output.format == format {
                reopened = output
            } else {
                failure = "audio device '\(configuration.device)' came back as \(output.format), not \(format)"
                output.close()
            }
        } catch {
            failure = error.message
        }
        lock.lock()

        if let reopened {
            // When the item is leaving meanwhile, its decoder thread closes this like any device.
            session.output = reopened
            session.deviceLostReason = nil
            let resume = session.resumeOnRestore || session.playRequested
            session.resumeOnRestore = false
            session.playRequested = resume
            if resume { session.playRequestedAt = EngineLock.now() }
            post(for: session, .deviceRestored(itemID: session.id, resumes: resume))
            return
        }
        session.deviceLostReason = failure
        session.nextReopenAt = EngineLock.now() + reopenInterval
        if session.playRequested {
            // Play was asked while the device is away: say so, and play once it is back.
            session.playRequested = false
            session.resumeOnRestore = true
            post(for: session, .deviceLost(itemID: session.id, EngineFailure(.deviceLost, failure)))
        }
    }
}
