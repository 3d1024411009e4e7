import Foundation
import TonearmMedia

/// The clip mixed over the music (`playOverlay`), on the decoder thread: opened in the format the
/// device is open in, decoded into its `OverlayRing` whenever half of the ring was mixed (the
/// ring holds a second, the pipe seconds), taking turns with the music's own work step by step
/// (a clip that arrives slowly never starves the music), and filled to the brim when the music
/// has nothing to do. Its open and each read give up after a while: a slow server would
/// otherwise hold up the music's decoding.
extension DecoderWorker {
    /// How long the clip's open, and each of its reads, may take.
    static let overlayOpenSeconds = 3.0
    static let overlayReadSeconds = 1.0

    /// Whether the clip needs the decoder: a new request (or one withdrawn), or half of its ring
    /// free (`urgent`); else, unless `urgent`, room left in a ring being filled. Lock held.
    func overlayNeedsWork(_ state: DecoderState, urgent: Bool = false) -> Bool {
        if shared.overlay.serial != state.overlaySerial { return true }
        guard state.overlayDecoder != nil, let ring = shared.overlay.ring, !ring.ended else { return false }
        if ring.room >= ring.capacity / 2 { return true }
        return !urgent && state.overlayFilling && ring.room > 0
    }

    /// One step for the clip: take up the request, or fill its ring. Lock held, released around
    /// FFmpeg and copies.
    func overlayStep(_ state: inout DecoderState) {
        shared.assertOn(.decoder)
        state.overlayTookTurn = true
        if shared.overlay.serial != state.overlaySerial {
            takeOverlayRequest(&state)
            return
        }
        guard let ring = shared.overlay.ring, let decoder = state.overlayDecoder else { return }
        state.overlayFilling = ring.room > 0
        guard state.overlayFilling else { return }
        let serial = shared.overlay.serial
        if state.overlayPending > 0 {
            let frames = min(state.overlayPending, ring.room)
            let start = ring.written
            shared.lock.unlock()
            ring.fill(from: decoder.scratch + state.overlayPendingOffset * ring.format.bytesPerFrame, frames: frames, at: start)
            shared.lock.lock()
            guard serial == shared.overlay.serial, shared.overlay.ring === ring else { return }
            ring.written += frames
            state.overlayPending -= frames
            state.overlayPendingOffset += frames
            return
        }
        shared.lock.unlock()
        shared.overlay.cancellation.setDeadline(secondsFromNow: Self.overlayReadSeconds)
        let result: Result<MediaDecoder.Chunk, EngineFailure>
        do throws(EngineFailure) { result = .success(try decoder.decodeNext()) } catch { result = .failure(error) }
        shared.lock.lock()
        guard serial == shared.overlay.serial, shared.overlay.ring === ring else { return }
        switch result {
        case .success(.frames(let count, _, _)):
            state.overlayPending = count
            state.overlayPendingOffset = 0
        case .success(.endOfStream):
            finishOverlayDecoding(ring, &state)
        case .failure:
            // Cut short (a read that failed or took too long): what was decoded plays, then it
            // ends as any clip does.
            finishOverlayDecoding(ring, &state)
        }
    }

    private func finishOverlayDecoding(_ ring: OverlayRing, _ state: inout DecoderState) {
        ring.ended = true
        let closing = state.overlayDecoder
        state.overlayDecoder = nil
        state.overlayPending = 0
        shared.lock.unlock()
        withExtendedLifetime(closing) {}  // FFmpeg's release runs here, off the lock
        shared.lock.lock()
        if ring.isDone, shared.overlay.ring === ring { shared.endOverlay(ring) }
    }

    /// Closes the clip decoded before, and opens the one asked for now, if any.
    private func takeOverlayRequest(_ state: inout DecoderState) {
        state.overlaySerial = shared.overlay.serial
        state.overlayPending = 0
        state.overlayFilling = false
        // The ring done with is let go here, off the lock, so that its memory is seldom the
        // output thread's to free.
        let closing = (state.overlayDecoder, state.overlayRing)
        state.overlayDecoder = nil
        state.overlayRing = nil
        guard let (item, gain) = shared.overlay.request else {
            shared.lock.unlock()
            withExtendedLifetime(closing) {}
            shared.lock.lock()
            return
        }
        let serial = shared.overlay.serial
        let format = shared.output.deviceOpen ? shared.output.deviceFormat : nil
        // Made ready under the lock: a withdrawal from now on cancels this open.
        shared.overlay.cancellation.reset()
        shared.overlay.cancellation.setDeadline(secondsFromNow: Self.overlayOpenSeconds)
        shared.lock.unlock()
        withExtendedLifetime(closing) {}
        let opened: Result<(MediaDecoder, OverlayRing), EngineFailure>
        if let format {
            do throws(EngineFailure) {
                let decoder = try MediaDecoder(url: item.url, input: input, cancellation: shared.overlay.cancellation)
                try decoder.configureOutput(format)
                opened = .success((decoder, OverlayRing(itemID: item.id, format: format, gain: gain)))
            } catch {
                opened = .failure(error)
            }
        } else {
            opened = .failure(EngineFailure(.deviceUnavailable, "nothing plays to mix '\(item.path)' over"))
        }
        shared.lock.lock()
        guard serial == shared.overlay.serial else {
            // Withdrawn or replaced meanwhile: dropped, FFmpeg's release off the lock.
            shared.lock.unlock()
            withExtendedLifetime(opened) {}
            shared.lock.lock()
            return
        }
        switch opened {
        case .success(let (decoder, ring)):
            state.overlayDecoder = decoder
            state.overlayRing = ring
            shared.overlay.ring = ring
        case .failure(let failure):
            shared.overlay.request = nil
            shared.post(.failed(itemID: item.id, failure))
        }
    }
}

extension EngineControl {
    /// The clip is over (all of it mixed, or it could not go on): posted as its end, and the
    /// decoder told to let its decoder go. Lock held (output or decoder thread).
    func endOverlay(_ ring: OverlayRing) {
        overlay.ring = nil
        overlay.request = nil
        overlay.serial += 1
        lock.wakeDecoder()
        post(.didPlayToEnd(itemID: ring.itemID))
    }
}
