import Foundation
import TonearmMedia
import TonearmSync

/// Placing what was decoded: pending frames copied (or decoded in place) into chunks and
/// pushed into the pipe as the fill target allows; the end marker at the end.
extension DecoderWorker {
    /// Copies pending frames into chunks and pushes them; at the end, pushes the end marker.
    func place(_ state: inout DecoderState) {
        shared.assertOn(.decoder)
        guard let item = state.item, let decoder = state.decoder else {
            dropWork(&state)
            return
        }
        if state.streamTitle != nil, let fill = state.fill, fill.frames > 0 {
            // A new title starts with a chunk of its own, so that it is heard at its first frame.
            shared.pipe.push(fill)
            state.fill = nil
            shared.lock.wakeOutput()
        }
        shared.decoder.network = decoder.isNetwork
        var tail = keepsTail(&state) ? state.gathering : nil
        if let tail, state.pendingFrames > 0, tail.free > 0 {
            keepBack(decoder, &state)
            return
        }
        // At the end with a tail kept back: how many of its oldest frames go on as they are.
        var handOn = tail?.count ?? 0
        if let kept = tail, state.pendingFrames == 0, state.endPending {
            switch tailDecision(&state) {
            case .crossfade(let keeping) where kept.count > keeping:
                // The next item is short: the overlap is half of it at most.
                handOn = kept.count - keeping
            case .crossfade:
                // The tail waits for the next item; the end marker goes on now.
                commitTail(&state)
                tail = nil
            case .handOn:
                break
            case .wait(let until):
                if let until { shared.lock.waitDecoder(untilMonotonic: until) } else { shared.lock.waitDecoder() }
                return
            }
        }
        if state.fill == nil {
            guard !shared.pipeIsFull, let chunk = shared.pipe.takeFree() else {
                // Full: sleep until it is half empty (hysteresis), so that the decoder wakes about
                // once a second however small the codec's frames are. The output thread wakes us
                // (a clip over the music, at half of its ring, too: that is served meanwhile).
                let myEpoch = shared.epoch
                while !shared.pipeIsHalfEmpty, shared.epoch == myEpoch, !shared.play.shuttingDown,
                    !shared.items.abandoned.contains(item.id),
                    !overlayNeedsWork(state, urgent: true)
                {
                    shared.lock.waitDecoder()
                }
                return
            }
            // Frames kept back come before the pending ones.
            let position = state.pendingPosition - Int64(tail?.count ?? 0)
            chunk.reset(
                epoch: shared.epoch, itemID: item.id, format: state.format, position: position,
                runStart: state.runStart, replayGain: decoder.info.replayGain,
                prefersAlbumGain: item.prefersAlbumGain, isNetwork: decoder.isNetwork)
            chunk.liveGainDB = state.live?.itemID == item.id ? state.live?.gain.decibels : nil
            chunk.streamTitle = state.streamTitle
            state.streamTitle = nil
            state.runStart = nil
            state.fill = chunk
        }
        guard let chunk = state.fill else { return }
        let bytesPerFrame = state.format.bytesPerFrame
        if let tail, tail.count > 0 {
            // The tail is full: its oldest frames go on, as many as wait to take their place;
            // or the item ended without a crossfade after all: all of them.
            let count = min(chunk.capacityFrames - chunk.frames, handOn, state.endPending ? tail.count : state.pendingFrames)
            let destination = chunk.bytes + chunk.frames * bytesPerFrame
            shared.lock.unlock()
            tail.takeOldest(into: destination, frames: count)
            shared.lock.lock()
            chunk.frames += count
            pushIfDue(chunk, &state)
            return
        }
        let count = min(chunk.capacityFrames - chunk.frames, state.pendingFrames)
        if count > 0 {
            let source = (state.pendingSource ?? decoder.scratch) + state.pendingOffset * bytesPerFrame
            let destination = chunk.bytes + chunk.frames * bytesPerFrame
            shared.lock.unlock()
            destination.copyMemory(from: source, byteCount: count * bytesPerFrame)
            shared.lock.lock()
            chunk.frames += count
            state.pendingOffset += count
            state.pendingFrames -= count
            state.pendingPosition += Int64(count)
        }
        pushIfDue(chunk, &state)
    }

    /// Where the next decoded frames may go straight into the chunk being filled (lock held):
    /// the chunk is the decoder's until it is pushed, so it is written without the lock, as the
    /// copy out of `scratch` is. Not while frames are to be discarded (the sample-exact landing
    /// cuts them in `scratch`), nor for a network source (a stream title read with the frames
    /// must start a chunk of its own), nor while the item's tail is kept back.
    func inPlaceDestination(_ decoder: MediaDecoder, _ state: DecoderState) -> MediaDecoder.Destination? {
        guard let chunk = state.fill, state.discardBefore == nil, state.pendingFrames == 0, !decoder.isNetwork,
            state.gathering.itemID != state.item?.id,
            chunk.format == decoder.outputFormat, chunk.frames < chunk.capacityFrames
        else { return nil }
        return MediaDecoder.Destination(
            bytes: chunk.bytes + chunk.frames * chunk.format.bytesPerFrame,
            frames: chunk.capacityFrames - chunk.frames)
    }

    /// Pushes the chunk being filled when it is due (lock held).
    func pushIfDue(_ chunk: PCMChunk, _ state: inout DecoderState) {
        shared.assertOn(.decoder)
        // An item ends once its pending frames and any tail kept back are placed.
        let ending =
            state.endPending && state.pendingFrames == 0
            && (state.gathering.itemID != state.item?.id || state.gathering.count == 0)
        // Push a full chunk; the first of a run at once (ready and seeks answer sooner); and, when
        // the output has nothing, a partial one holding twice what the last push held: a run
        // starts with a small chunk, then 2, 4, 8 times as much, so a slow source does not starve
        // the device, while a fast one settles on full chunks (each hand-off wakes the output
        // thread: a consumer that never waits, the `null` device unpaced, would otherwise get
        // twice as many wake-ups).
        // A device without a clock (see `OutputReport.takesBatches`) is never short of audio: it gets
        // full chunks, and is woken once half the pipe's target is there, or at an item's end.
        let outputHasNothing = shared.pipe.isEmpty && !shared.output.takesBatches
        let starvedHandOff = min(chunk.capacityFrames, max(chunk.capacityFrames / 16, 2 * state.lastPushedFrames))
        if ending || chunk.frames == chunk.capacityFrames || chunk.runStart != nil
            || (outputHasNothing && chunk.frames >= starvedHandOff)
        {
            chunk.endsItem = ending
            shared.pipe.push(chunk)
            state.fill = nil
            state.lastPushedFrames = chunk.frames
            if ending {
                state.endPending = false
            }
            let batchReady =
                shared.output.takesBatches
                && (ending || shared.pipe.freeCount == 0 || shared.pipe.bufferedSeconds >= shared.fillTarget / 2)
            // The output needs waking only when it may be waiting for this chunk: it had nothing,
            // or the chunk starts a run. Otherwise it reaches the chunk in its own time.
            if outputHasNothing || chunk.runStart != nil || shared.output.awaitsFill || batchReady { shared.lock.wakeOutput() }
        }
    }
}
