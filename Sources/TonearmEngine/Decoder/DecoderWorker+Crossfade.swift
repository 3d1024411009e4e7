import Foundation
import TonearmMedia

/// Crossfades, on the decoder thread: the last seconds of an item are kept back from the pipe
/// (`CrossfadeTail`), and at its end they are mixed into the first frames of the next item,
/// which is converted to the same format (the device's), so the output sees one gapless run and
/// the device is never reopened for it. The pipe holds a few seconds; an overlap of up to 15
/// cannot wait there, so the mix is made before it.
///
/// The item coming in owns the overlap: its chunks carry the mix, its `started` comes at the
/// overlap's first frame, and the item going out ends where its tail began.
extension DecoderWorker {
    /// Keeping back begins this long before the overlap, by the item's stated length: a header
    /// that says a little more or less than the stream holds still leaves the whole tail kept.
    static let tailMarginSeconds = 1.0

    /// When the item ended and whether it crossfades is not known yet (its next is not named),
    /// the tail waits at most until the pipe holds this little: then it is handed on as it is.
    static let undecidedTailSeconds = 0.3

    /// The overlap the open item would end in, in frames of its chunks: set when a crossfade is
    /// set, the item has a known length and its next (if named yet) does not join gaplessly;
    /// at most half the item. The next is often named only once the item is heard, after the
    /// decoder passed the point where keeping back starts: so it is kept back on the chance.
    /// Lock held.
    private func plannedOverlapFrames(_ item: EngineItem, _ decoder: MediaDecoder, _ state: DecoderState) -> Int? {
        let format = state.format
        // A network item arrives at its own pace: keeping seconds of it back could starve the output.
        guard state.crossfadeSeconds > 0, !decoder.isNetwork, let duration = decoder.info.duration, duration > 0 else { return nil }
        if let next = shared.next, next.after == item.id, next.item.joinsGaplessly == true { return nil }
        let frames = Int((min(state.crossfadeSeconds, duration / 2) * Double(format.sampleRate)).rounded())
        return frames > 0 ? frames : nil
    }

    /// Starts keeping back the open item's frames once they are within the overlap (and its
    /// margin) of its end. Returns whether its frames are kept back now. Lock held.
    @discardableResult
    func keepsTail(_ state: inout DecoderState) -> Bool {
        guard let item = state.item, let decoder = state.decoder else { return false }
        if state.gathering.itemID == item.id { return true }
        guard let frames = plannedOverlapFrames(item, decoder, state),
            let duration = decoder.info.duration
        else { return false }
        let margin = Int64(Self.tailMarginSeconds * Double(state.format.sampleRate))
        let from = Int64((duration * Double(state.format.sampleRate)).rounded()) - Int64(frames) - margin
        guard state.pendingPosition >= from else { return false }
        if state.gathering.needsStorage(frames: frames, format: state.format) {
            // Megabytes at most, once: not under the lock the output thread takes.
            let tail = state.gathering
            let format = state.format
            shared.lock.unlock()
            tail.reserve(frames: frames, format: format)
            shared.lock.lock()
        }
        state.gathering.begin(itemID: item.id, format: state.format, frames: frames)
        state.tailDeadline = nil
        return true
    }

    /// Moves pending frames into the tail while it has room (the copy off the lock).
    func keepBack(_ decoder: MediaDecoder, _ state: inout DecoderState) {
        let tail = state.gathering
        let count = min(tail.free, state.pendingFrames)
        let source = (state.pendingSource ?? decoder.scratch) + state.pendingOffset * state.format.bytesPerFrame
        shared.lock.unlock()
        tail.append(from: source, frames: count)
        shared.lock.lock()
        state.pendingOffset += count
        state.pendingFrames -= count
        state.pendingPosition += Int64(count)
    }

    enum TailDecision {
        /// Mixed into the next item, its newest `keeping` frames (the rest is handed on first).
        case crossfade(keeping: Int)
        /// Handed on as it is: no crossfade after all.
        case handOn
        /// Not known yet: the next is not named, or whether it joins gaplessly is not known (its
        /// tags are being read). Asked again at a command, or then (nil: paused, nothing drains
        /// the pipe; a play wakes the decoder); then handed on, gapless.
        case wait(until: Double?)
    }

    /// At the open item's end, with a kept tail: what becomes of it. Lock held.
    func tailDecision(_ state: inout DecoderState) -> TailDecision {
        guard let item = state.item, state.gathering.count > 0, state.crossfadeSeconds > 0 else { return .handOn }
        if let next = shared.next, next.after == item.id, next.item.id != state.failedNextID, let joinsGaplessly = next.item.joinsGaplessly
        {
            guard !joinsGaplessly else { return .handOn }
            // At most half the next item, as it is at most half this one (its length as tagged).
            let half = next.item.durationHint.map { Int($0 / 2 * Double(state.gathering.format.sampleRate)) }
            return .crossfade(keeping: min(state.gathering.count, half ?? .max))
        }
        guard shared.play.requested else { return .wait(until: nil) }
        // One timed wait at most, counted from the first while playing.
        let now = EngineLock.now()
        let deadline = state.tailDeadline ?? now + max(0, shared.pipe.bufferedSeconds - Self.undecidedTailSeconds) / shared.speed
        state.tailDeadline = deadline
        return now < deadline ? .wait(until: deadline) : .handOn
    }

    /// The item ended and its tail waits for the next: it becomes the tail to mix, with the
    /// item's gain taken now (the output's gain for the next item differs). Lock held.
    func commitTail(_ state: inout DecoderState) {
        guard let item = state.item else { return }
        swap(&state.gathering, &state.mixing)
        state.gathering.clear()
        let tags = state.decoder?.info.replayGain
        // The loudness the output levels the item with, once it has reached it (a measurement
        // landing later does not change an item's level mid-item).
        let loudness = shared.leveling(item.id)
        state.mixing.itemGainDB =
            state.replayGain.gain(
                tags: tags, loudness: loudness.measurement, prefersAlbum: item.prefersAlbumGain,
                provisional: loudness.provisional
            ).decibels
        state.mixing.replayGain = tags
        state.mixing.startPosition = state.pendingPosition - Int64(state.mixing.count)
    }

    /// The item the tail was mixed into ended before the tail did (shorter than its tag said):
    /// the rest of the tail follows as its own frames, faded out along the curve. Returns true
    /// when frames were set pending. Decoder thread.
    func fadeOutRestOfTail(_ decoder: MediaDecoder, _ state: inout DecoderState) -> Bool {
        let tail = state.mixing
        guard let previous = state.previous, tail.itemID == previous.id, state.mixedFrames < tail.count,
            tail.format == decoder.outputFormat
        else { return false }
        let (frames, count) = tail.fadeOut(from: state.mixedFrames, frames: tail.count - state.mixedFrames)
        guard count > 0 else { return false }
        state.mixedFrames += count
        state.pendingSource = frames
        state.pendingFrames = count
        state.pendingOffset = 0
        return true
    }

    /// Whether a tail was mixed into nothing: the item it ends was decoded to its end, and its
    /// next was withdrawn, or failed and nothing was named in its place. Lock held.
    func tailIsOrphaned(_ state: DecoderState) -> Bool {
        guard state.finished, let item = state.item, state.mixing.itemID == item.id, state.mixing.count > 0 else { return false }
        guard let next = shared.next, next.after == item.id else { return true }
        return false
    }

    /// Hands an orphaned tail on as it is, as the rest of its item (after the item's end marker,
    /// with the item's last marker after it): the item plays to its end as if joined gaplessly.
    func handOnOrphanedTail(_ state: inout DecoderState) {
        guard let item = state.item else { return }
        let tail = state.mixing
        guard !shared.pipeIsFull, let chunk = shared.pipe.takeFree() else {
            let myEpoch = shared.epoch
            while !shared.pipeIsHalfEmpty, shared.epoch == myEpoch, !shared.play.shuttingDown, tailIsOrphaned(state) {
                shared.lock.waitDecoder()
            }
            return
        }
        chunk.reset(
            epoch: shared.epoch, itemID: item.id, format: tail.format, position: tail.startPosition, runStart: nil,
            replayGain: tail.replayGain, prefersAlbumGain: item.prefersAlbumGain, isNetwork: false)
        let count = min(chunk.capacityFrames, tail.count)
        shared.lock.unlock()
        tail.takeOldest(into: chunk.bytes, frames: count)
        shared.lock.lock()
        chunk.frames = count
        tail.startPosition += Int64(count)
        chunk.endsItem = tail.count == 0
        if tail.count == 0 { tail.clear() }
        shared.pipe.push(chunk)
        shared.lock.wakeOutput()
    }

    /// The format the next item must be decoded in: the tail's, when one waits for it. Lock held.
    func formatForNext(after previous: EngineItem?, _ state: DecoderState) -> PCMFormat? {
        guard let previous, state.mixing.itemID == previous.id, state.mixing.count > 0 else { return nil }
        return state.mixing.format
    }

    /// The next item opened after an item whose tail waits: the tail is scaled by the gain of its
    /// own item over the gain the output gives this one. Lock held.
    func prepareMix(into item: EngineItem, _ decoder: MediaDecoder, _ state: inout DecoderState) {
        guard formatForNext(after: state.previous, state) != nil else { return }
        let loudness = shared.leveling(item.id)
        let incoming = state.replayGain.gain(
            tags: decoder.info.replayGain, loudness: loudness.measurement,
            prefersAlbum: item.prefersAlbumGain, provisional: loudness.provisional
        ).decibels
        state.mixing.gain = GainStage.factor(decibels: state.mixing.itemGainDB - incoming)
        state.mixedFrames = 0
    }

    /// Mixes the waiting tail into frames just decoded at the start of the item after it.
    /// Frames are counted as they come (`mixedFrames`), not by their timestamps: a resampler's
    /// delay makes those run ahead of the frames it has given out.
    /// Decoder thread, off the lock (the tail and the frames are the decoder's alone).
    func mixTail(into frames: UnsafeMutableRawPointer, count: Int, _ decoder: MediaDecoder, _ state: inout DecoderState) {
        let tail = state.mixing
        guard let previous = state.previous, tail.itemID == previous.id, state.mixedFrames < tail.count,
            tail.format == decoder.outputFormat
        else { return }
        tail.mix(into: frames, frames: count, from: state.mixedFrames)
        state.mixedFrames += count
    }
}
