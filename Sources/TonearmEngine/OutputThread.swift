import Foundation

/// The output thread: writes the current item's ring to its ALSA device, one period at a time.
/// It holds the lock except around device calls, and sleeps on `outputWake` when there is nothing
/// to do (idle or paused: no wake-ups at all). With `pace`, it keeps one period ahead of a
/// monotonic clock running at `speed`, for devices that never block.
extension EngineRuntime {
    /// How long the ring may stay empty while playing before we report buffering.
    private static let starvationGrace = 0.1

    func runOutput() {
        var current: ItemSession?
        var seenFlush = 0
        var devicePaused = false
        var waitingReported = false
        var lastPublishedSecond = -1
        // Pacing clock: frames counted from `paceAnchor`, consumed at rate × speed.
        var paceAnchor = 0.0
        var pacedFrames = 0

        lock.lock()
        defer { lock.unlock() }
        while true {
            // Let go of an item that was replaced, stopped or failed: its decoder thread closes the device.
            if let held = current, held.cancelled || held.decoderExiting || held !== item {
                held.outputHeld = false
                held.consuming = false
                current = nil
                lock.wakeDecoder()
                continue
            }
            if shuttingDown && current == nil && item == nil { return }
            guard let session = item, session.ready, !session.decoderExiting,
                  let ring = session.ring, let format = session.format else {
                lock.waitOutput()
                continue
            }
            if current !== session {
                current = session
                session.outputHeld = true
                seenFlush = session.flushGeneration
                devicePaused = false
                waitingReported = false
            }
            if session.deviceLostReason != nil {
                // Nothing to discard on seeks meanwhile: the device is closed.
                seenFlush = session.flushGeneration
                devicePaused = false
                reopenLostDevice(session, format: format)
                continue
            }
            guard let output = session.output else {
                lock.waitOutput()
                continue
            }
            let rate = Double(format.sampleRate) * speed
            let now = EngineLock.now()

            if session.flushGeneration != seenFlush {
                // A seek emptied the ring: what the device holds is from before it.
                seenFlush = session.flushGeneration
                lock.unlock()
                output.discard()
                lock.lock()
                devicePaused = false
                if session.consuming { paceAnchor = EngineLock.now(); pacedFrames = 0 }
                session.heldFrames = 0
                session.heldAt = EngineLock.now()
                continue
            }

            if !session.playRequested {
                if session.consuming {
                    session.heldFrames = Int(session.heldFrames(now: now, speed: speed).rounded())
                    session.heldAt = now
                    session.consuming = false
                    lock.unlock()
                    let inPlace = output.pauseNow()
                    lock.lock()
                    devicePaused = inPlace
                    if !inPlace { rewindToHeard(session, format: format, now: now) }
                    publish(for: session) {
                        $0.timeControlStatus = .paused
                        $0.currentTime = session.position(now: now, speed: speed)
                    }
                }
                lock.waitOutput()
                continue
            }

            if !session.consuming {
                if devicePaused {
                    lock.unlock()
                    output.resume()
                    lock.lock()
                    devicePaused = false
                } else {
                    // A device that dropped on pause lost what it held; the ring restarts at what was heard.
                    session.heldFrames = 0
                }
                session.consuming = true
                session.heldAt = EngineLock.now()
                paceAnchor = session.heldAt
                pacedFrames = session.heldFrames
                waitingReported = false
                publish(for: session) {
                    $0.timeControlStatus = .playing
                    $0.isPlaybackLikelyToKeepUp = true
                }
                continue
            }

            // What one write hands the device: a period, or with pacing a larger chunk, since the
            // clock (not the device) decides when to write and each write is a wake-up.
            let chunkFrames = configuration.pace ? max(output.periodFrames, format.sampleRate / 10) : output.periodFrames
            if configuration.pace {
                // Stay one chunk ahead of the clock.
                let ahead = Double(pacedFrames) - (now - paceAnchor) * rate
                let lead = Double(chunkFrames)
                if ahead > lead {
                    lock.waitOutput(untilMonotonic: paceAnchor + (Double(pacedFrames) - lead) / rate)
                    continue
                }
            }

            // The ring is about to be emptied and refilled from the seek's target: nothing in it is wanted.
            if session.pendingSeek != nil {
                lock.waitOutput()
                continue
            }
            let (pointer, available) = ring.readable
            if available == 0 {
                if session.decoderFinished {
                    if session.endReported { lock.waitOutput(); continue }
                    if configuration.pace {
                        let drainedAt = paceAnchor + Double(pacedFrames) / rate
                        if now < drainedAt { lock.waitOutput(untilMonotonic: drainedAt); continue }
                    }
                    lock.unlock()
                    output.drain()
                    lock.lock()
                    if session.cancelled || session.flushGeneration != seenFlush || !session.playRequested { continue }
                    session.endReported = true
                    session.playRequested = false
                    session.consuming = false
                    session.heldFrames = 0
                    session.heldAt = EngineLock.now()
                    post(for: session, .didPlayToEnd(itemID: session.id))
                    publish(for: session) {
                        $0.timeControlStatus = .paused
                        $0.currentTime = session.position(now: session.heldAt, speed: speed)
                    }
                    continue
                }
                if waitingReported {
                    lock.waitOutput()
                } else if !lock.waitOutput(untilMonotonic: now + Self.starvationGrace), ring.filledFrames == 0,
                          !session.decoderFinished, item === session {
                    waitingReported = true
                    publish(for: session) {
                        $0.timeControlStatus = .waitingToPlay
                        $0.isPlaybackBufferEmpty = true
                        $0.isPlaybackLikelyToKeepUp = false
                    }
                }
                continue
            }
            if waitingReported {
                waitingReported = false
                publish(for: session) {
                    $0.timeControlStatus = .playing
                    $0.isPlaybackBufferEmpty = false
                    $0.isPlaybackLikelyToKeepUp = true
                }
            }

            let frames = min(available, chunkFrames)
            session.outputWriting = true
            lock.unlock()
            let outcome = output.write(pointer, frames: frames)
            let deviceDelay = configuration.pace ? 0 : output.delayFrames()
            lock.lock()
            session.outputWriting = false
            if session.pendingSeek != nil || session.cancelled { lock.wakeDecoder() }

            switch outcome {
            case .wrote(let count):
                let halfFreeBefore = ring.freeFrames >= ring.capacityFrames / 2
                ring.consume(count)
                if !halfFreeBefore && ring.freeFrames >= ring.capacityFrames / 2 { lock.wakeDecoder() }
                session.framesWritten += Int64(count)
                let writtenAt = EngineLock.now()
                if configuration.pace {
                    pacedFrames += count
                    session.heldFrames = max(0, Int(Double(pacedFrames) - (writtenAt - paceAnchor) * rate))
                } else {
                    session.heldFrames = deviceDelay
                }
                session.heldAt = writtenAt
                if let requestedAt = session.playRequestedAt, count > 0 {
                    session.playRequestedAt = nil
                    post(for: session, .firstAudioWritten(itemID: session.id, latency: writtenAt - requestedAt))
                }
                let second = Int(session.position(now: writtenAt, speed: speed))
                if second != lastPublishedSecond {
                    lastPublishedSecond = second
                    publish(for: session) { $0.currentTime = Double(second) }
                }
            case .recovered:
                post(for: session, .underrun(itemID: session.id))
            case .lost(let reason):
                deviceWasLost(session, output, format: format, reason: reason)
            }
        }
    }

}
