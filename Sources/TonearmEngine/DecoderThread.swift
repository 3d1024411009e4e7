import Foundation

/// The decoder thread of one item: opens the file and the device, decodes ahead into the ring,
/// serves seeks, and at the end closes both. Everything FFmpeg lives here and nowhere else.
extension EngineRuntime {
    func runDecoder(_ session: ItemSession, unsupported: String?) {
        var decoder: MediaDecoder?
        defer { finishDecoder(session, decoder: &decoder) }

        do throws(EngineFailure) {
            if let unsupported { throw EngineFailure(.unsupportedFormat, unsupported) }
            let opened = try MediaDecoder(path: session.path, cancellation: session.cancellation)
            decoder = opened
            guard claimDevice(for: session) else { return }
            let requested = configuration.requestedFormat(forSource: opened.sourceFormat)
            let output = try AlsaOutput.open(device: configuration.device, requested: requested,
                                             bufferMilliseconds: configuration.bufferMilliseconds)
            try opened.configureOutput(output.format)
            let format = output.format
            // About a second ahead: the decoder wakes about twice a second while playing.
            let ring = PCMRing(capacityFrames: max(format.sampleRate, output.bufferFrames * 2),
                               bytesPerFrame: format.bytesPerFrame)
            let info = MediaInfo(url: session.path, duration: opened.info.duration, codec: opened.info.codec,
                                 container: opened.info.container, sampleRate: opened.sourceFormat.sampleRate,
                                 channels: opened.sourceFormat.channels, bitsPerSample: opened.info.bits,
                                 title: opened.info.title, artist: opened.info.artist, album: opened.info.album,
                                 outputFormat: format)
            let startFrame = Int64((session.startAt * Double(format.sampleRate)).rounded())
            lock.withLock {
                session.output = output
                session.ring = ring
                session.format = format
                session.basePosition = startFrame
                publish(for: session) { $0.duration = info.duration; $0.mediaInfo = info }
            }
            if startFrame > 0 { try opened.seek(toFrame: startFrame) }
            try decodeLoop(session, decoder: opened, ring: ring, format: format,
                           discardBefore: startFrame > 0 ? startFrame : nil)
        } catch {
            lock.withLock {
                publish(for: session) { $0.status = .failed(error) }
                post(for: session, .failed(itemID: session.id, error))
            }
        }
    }

    /// Waits until earlier items have closed the device (those that ever opened it), then claims
    /// it for `session`. An earlier item still stuck opening its file never claimed the device,
    /// so it holds up nobody, but what it replaced still counts: the chain of `previous` is
    /// walked. Returns false when `session` was cancelled meanwhile.
    private func claimDevice(for session: ItemSession) -> Bool {
        func deviceHeldBefore(_ session: ItemSession) -> Bool {
            var cursor = session.previous
            while let earlier = cursor {
                if earlier.deviceClaimed && !earlier.deviceReleased { return true }
                cursor = earlier.previous
            }
            return false
        }
        return lock.withLock {
            while deviceHeldBefore(session), !session.cancelled { lock.waitDecoder() }
            session.previous = nil
            if session.cancelled { return false }
            session.deviceClaimed = true
            return true
        }
    }

    private func decodeLoop(_ session: ItemSession, decoder: MediaDecoder, ring: PCMRing, format: PCMFormat,
                            discardBefore initialTarget: Int64?) throws(EngineFailure) {
        // What to announce once the next frames are in the ring (or the stream ended).
        var readyPending = true
        var seekPending: (token: Int, target: Int64)?
        var discardBefore = initialTarget
        var decodedAny = false

        func complete() {
            // Lock held. Only the first frames after load or a seek have something to announce.
            guard readyPending || seekPending != nil else { return }
            if readyPending {
                session.ready = true
                publish(for: session) {
                    $0.status = .readyToPlay
                    $0.isPlaybackBufferEmpty = ring.filledFrames == 0
                    $0.isPlaybackLikelyToKeepUp = true
                }
            }
            if let (token, target) = seekPending {
                let position = Double(target) / Double(format.sampleRate)
                publish(for: session) { $0.currentTime = position }
                post(for: session, .seekCompleted(itemID: session.id, token: token, position: position))
            }
            readyPending = false
            seekPending = nil
            lock.wakeOutput()
        }

        while true {
            // Commands first: cancel, seek, or sleep once everything is decoded.
            lock.lock()
            if session.cancelled { lock.unlock(); return }
            if session.pendingSeek != nil {
                // Let a write in progress finish first; the output thread wakes us after it because
                // a seek is still pending (taking it before would leave nobody to wake us).
                while session.outputWriting, session.pendingSeek != nil, !session.cancelled { lock.waitDecoder() }
                guard let seek = session.pendingSeek, !session.cancelled else { lock.unlock(); continue }
                session.pendingSeek = nil
                var target = Int64((seek.seconds * Double(format.sampleRate)).rounded())
                if let duration = decoder.info.duration {
                    target = min(target, Int64((duration * Double(format.sampleRate)).rounded()))
                }
                ring.reset()
                session.basePosition = target
                session.framesWritten = 0
                session.heldFrames = 0
                session.heldAt = EngineLock.now()
                session.flushGeneration += 1
                session.decoderFinished = false
                lock.wakeOutput()
                lock.unlock()
                try decoder.seek(toFrame: target)
                seekPending = (seek.token, target)
                discardBefore = target
                continue
            }
            if session.decoderFinished {
                lock.waitDecoder()
                lock.unlock()
                continue
            }
            lock.unlock()

            switch try decoder.decodeNext() {
            case .frames(let count, let position):
                var skip = 0
                if let target = discardBefore {
                    if position + Int64(count) <= target { continue }
                    skip = Int(max(0, target - position))
                    discardBefore = nil
                }
                decodedAny = true
                let written = write(session, ring: ring, from: decoder.scratch + skip * format.bytesPerFrame,
                                    frames: count - skip, onFirstCommit: complete)
                if !written { continue }  // interrupted by a seek or cancel
            case .endOfStream:
                if readyPending, !decodedAny {
                    throw EngineFailure(.decodeFailed, "no audio could be decoded from \(session.path)")
                }
                lock.withLock {
                    complete()
                    session.decoderFinished = true
                    lock.wakeOutput()
                }
            }
        }
    }

    /// Copies frames into the ring, sleeping while it is full. Returns false when a seek or a
    /// cancel interrupted the copy (the rest of the chunk is dropped).
    private func write(_ session: ItemSession, ring: PCMRing, from source: UnsafeRawPointer, frames: Int,
                       onFirstCommit: () -> Void) -> Bool {
        var offset = 0
        var first = true
        while offset < frames {
            lock.lock()
            // When the rest does not fit, sleep until half the ring is free (hysteresis): the decoder
            // then wakes about twice a second while playing, however small the codec's frames are.
            if ring.freeFrames < frames - offset {
                while ring.freeFrames < ring.capacityFrames / 2, !session.cancelled, session.pendingSeek == nil {
                    lock.waitDecoder()
                }
            }
            if session.cancelled || session.pendingSeek != nil {
                lock.unlock()
                return false
            }
            let count = min(ring.freeFrames, frames - offset)
            lock.unlock()
            ring.copyIn(source + offset * ring.bytesPerFrame, frames: count)
            lock.lock()
            let filledBefore = ring.filledFrames
            ring.commit(count)
            if first { onFirstCommit(); first = false }
            // The output thread sleeps on an empty ring only when it outruns us (a device that
            // never blocks, or a slow source): wake it once a batch is there, not for every frame.
            let batch = ring.capacityFrames / 4
            if filledBefore < batch && ring.filledFrames >= batch { lock.wakeOutput() }
            lock.unlock()
            offset += count
        }
        return true
    }

    /// Waits for the output thread to let go of the device, then closes it and frees FFmpeg.
    private func finishDecoder(_ session: ItemSession, decoder: inout MediaDecoder?) {
        let output: AlsaOutput? = lock.withLock {
            session.decoderExiting = true
            lock.wakeOutput()
            while session.outputHeld { lock.waitDecoder() }
            defer { session.output = nil; session.ring = nil }
            return session.output
        }
        output?.close()
        decoder = nil
        lock.withLock {
            session.deviceReleased = true
            lock.wakeAll()
        }
    }
}
