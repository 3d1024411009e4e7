import Foundation
import TonearmMedia
import TonearmSync

/// Opening on the decoder thread: the item asked for (a load, a seek, a refill), and the next
/// one ahead of the border, each opened and sought off the engine lock.
extension DecoderWorker {
    /// Takes up the current epoch's target: nothing (stop), a seek within the open item, or a new item.
    func takeTarget(_ state: inout DecoderState) {
        shared.assertOn(.decoder)
        shared.decoder.epoch = shared.epoch
        let myEpoch = shared.epoch
        dropWork(&state)
        giveUpWholeMeasurement(&state)
        state.finished = false
        state.failedNextID = nil
        shared.decoder.failedNextID = nil
        state.previous = nil
        state.mixing.clear()
        guard let target = shared.target else {
            shared.decoder.itemID = nil
            state.item = nil
            let closing = state.decoder
            state.decoder = nil
            shared.lock.unlock()
            withExtendedLifetime(closing) {}  // FFmpeg's release runs here, off the lock
            shared.lock.lock()
            return
        }
        shared.decoder.itemID = target.item.id
        var reuse = state.item?.id == target.item.id ? state.decoder : nil
        let reused = reuse != nil
        // A seek within the open item keeps its decoder, whose I/O answers to its own flag.
        let cancellation = reuse?.cancellation ?? CancellationFlag()
        cancellation.reset()
        shared.decoder.cancellation = cancellation
        // An item decoded in the format of a crossfade keeps it through a seek (no reopen mid-item).
        var format = reuse.map {
            state.formatForced ? shared.output.grantedFormats[state.format] ?? state.format : chunkFormat(for: $0.sourceFormat)
        }
        if reuse == nil { state.formatForced = false }
        let opened: Result<(MediaDecoder, Int64), EngineFailure>
        shared.lock.unlock()
        if let reusing = reuse, let format {
            opened = seek(
                reusing, format: format, seconds: target.startSeconds, url: target.item.url,
                cancellation: cancellation)
            if case .success(let (decoder, _)) = opened, decoder !== reusing {
                // Opened again (a seek to 0, a demuxer that refused): the old FFmpeg state is freed here, off the lock.
                state.decoder = nil
                reuse = nil
            }
        } else {
            state.decoder = nil  // the previous item's FFmpeg state is freed here, off the lock
            opened = openDecoder(target.item, cancellation: cancellation, startSeconds: target.startSeconds, format: &format)
        }
        shared.lock.lock()
        guard shared.epoch == myEpoch else {
            if case .success(let (decoder, _)) = opened {
                state.decoder = decoder
                state.item = target.item
            }
            return
        }
        switch opened {
        case .failure(let failure):
            state.decoder = nil
            state.item = nil
            shared.decoder.itemID = nil
            shared.publish { $0.status = .failed(failure) }
            shared.post(.failed(itemID: target.item.id, failure))
        case .success(let (decoder, startFrame)):
            if reuse !== decoder || reuse == nil { noteOpened(target.item, decoder) }
            state.decoder = decoder
            state.item = target.item
            state.format = format ?? decoder.outputFormat
            state.runStart = target.runStart
            state.discardBefore = startFrame > 0 ? startFrame : nil
            state.pendingPosition = startFrame
            state.mustProduce = startFrame == 0 && target.runStart == .opened
            state.liveTarget = liveTarget(for: decoder, state)
            if !reused, startFrame == 0, target.runStart == .opened { measureOnTheWay(target.item, decoder, &state) }
            if !reused { measureOpening(target.item, decoder, state) }
        }
    }

    /// Opens an item's file and prepares conversion; seeks when `startSeconds` > 0. Lock not held.
    /// `forcing` a format decodes in it whatever the source (the next item of a crossfade).
    func openDecoder(
        _ item: EngineItem, cancellation: CancellationFlag, startSeconds: Double,
        forcing forced: PCMFormat? = nil,
        format: inout PCMFormat?
    ) -> Result<(MediaDecoder, Int64), EngineFailure> {
        do throws(EngineFailure) {
            let decoder = try MediaDecoder(url: item.url, input: input, cancellation: cancellation)
            let chosen = forced ?? shared.lock.withLock { chunkFormat(for: decoder.sourceFormat) }
            try decoder.configureOutput(chosen)
            format = chosen
            // A live stream starts where it is now, whatever position was asked (a restore).
            guard startSeconds > 0, !decoder.isLive else { return .success((decoder, 0)) }
            let frame = Self.clampedFrame(decoder, seconds: startSeconds, rate: chosen.sampleRate)
            // Frame 0 is where the open stands: no seek (see `seek` below).
            guard frame > 0 else { return .success((decoder, 0)) }
            try decoder.seek(toFrame: frame)
            return .success((decoder, frame))
        } catch {
            return .failure(error)
        }
    }

    /// The track frame for `seconds`, never past the end the file states.
    static func clampedFrame(_ decoder: MediaDecoder, seconds: Double, rate: Int) -> Int64 {
        var frame = Int64((max(0, seconds) * Double(rate)).rounded())
        if let duration = decoder.info.duration { frame = min(frame, Int64((duration * Double(rate)).rounded())) }
        return frame
    }

    /// Seeks the open decoder. Some demuxers refuse to seek once they reached the end of the file
    /// (FLAC answers EPERM): then the file is opened again and the seek made on the fresh one.
    func seek(
        _ decoder: MediaDecoder, format: PCMFormat, seconds: Double, url: URL,
        cancellation: CancellationFlag
    ) -> Result<(MediaDecoder, Int64), EngineFailure> {
        do throws(EngineFailure) {
            if decoder.isLive {
                // A live stream does not seek: it is joined again, live (a play after a pause).
                let fresh = try MediaDecoder(url: url, input: input, cancellation: cancellation)
                try fresh.configureOutput(format)
                return .success((fresh, 0))
            }
            let frame = Self.clampedFrame(decoder, seconds: seconds, rate: format.sampleRate)
            if frame == 0 {
                // Back to the first sample: opened again, as a load opens it. FFmpeg's seek there
                // is not sample-exact: an MP3's start skip (encoder delay, which the stream's
                // start time includes) is applied only to the packet at pts 0, which a seek to
                // that start time passes by, so frames before 0 come out, the first of them
                // without its bit reservoir (silence); Opus (its pre-skip is not dropped again
                // after a flush) and AAC in MP4 do not give their first frames again either.
                let fresh = try MediaDecoder(url: url, input: input, cancellation: cancellation)
                try fresh.configureOutput(format)
                return .success((fresh, 0))
            }
            if decoder.outputFormat != format { try decoder.configureOutput(format) }
            do {
                try decoder.seek(toFrame: frame)
                return .success((decoder, frame))
            } catch {
                let fresh = try MediaDecoder(url: url, input: input, cancellation: cancellation)
                try fresh.configureOutput(format)
                try fresh.seek(toFrame: frame)
                return .success((fresh, frame))
            }
        } catch {
            return .failure(error)
        }
    }

    /// Records an opened item's info and tells observers. Lock held.
    func noteOpened(_ item: EngineItem, _ decoder: MediaDecoder) {
        var info = MediaInfo(
            url: item.path, duration: decoder.info.duration, codec: decoder.info.codec,
            container: decoder.info.container, sampleRate: decoder.sourceFormat.sampleRate,
            channels: decoder.sourceFormat.channels, bitsPerSample: decoder.info.bits,
            title: decoder.info.tags.first { $0.tag == .title }?.value,
            artist: decoder.info.tags.first { $0.tag == .artist }?.value,
            album: decoder.info.tags.first { $0.tag == .album }?.value,
            outputFormat: decoder.outputFormat, replayGain: decoder.info.replayGain,
            bitRate: decoder.info.bitRate)
        info.isLive = decoder.isLive
        // Keep the infos of items still in play: the heard one and those after it.
        let heard = shared.heardItemID
        shared.decoder.infos.removeAll { $0.itemID != heard && $0.itemID != item.id && $0.itemID < (heard ?? 0) }
        if shared.decoder.infos.count >= 8 { shared.decoder.infos.removeFirst() }
        shared.decoder.infos.append((item.id, info))
        shared.post(.opened(itemID: item.id, info))
    }

    /// Opens the item that follows the one just decoded, for a gapless join.
    func openNext(_ item: EngineItem, _ state: inout DecoderState) {
        shared.assertOn(.decoder)
        let myEpoch = shared.epoch
        let previous = state.item
        shared.decoder.itemID = item.id
        let cancellation = CancellationFlag()
        shared.decoder.cancellation = cancellation
        // Crossfading into it: it is converted to the format of the tail it is mixed with; and
        // while crossfades are on, an item after one so converted stays in that format too.
        let forced =
            formatForNext(after: previous, state)
            ?? (state.formatForced && state.crossfadeSeconds > 0 ? state.format : nil)
        shared.lock.unlock()
        state.decoder = nil
        var format: PCMFormat?
        let opened = openDecoder(item, cancellation: cancellation, startSeconds: 0, forcing: forced, format: &format)
        shared.lock.lock()
        guard shared.epoch == myEpoch else { return }
        switch opened {
        case .failure(let failure):
            // The previous item stays the last decoded one; the player decides what follows it now.
            state.item = previous
            state.finished = true
            state.failedNextID = item.id
            shared.decoder.failedNextID = item.id
            shared.decoder.itemID = previous?.id
            if !shared.items.abandoned.contains(item.id) { shared.post(.failed(itemID: item.id, failure)) }
            shared.lock.wakeOutput()
        case .success(let (decoder, _)):
            noteOpened(item, decoder)
            state.previous = previous
            state.decoder = decoder
            state.item = item
            state.format = format ?? decoder.outputFormat
            state.formatForced = forced != nil
            state.finished = false
            state.runStart = .advance
            state.discardBefore = nil
            state.pendingPosition = 0
            state.mustProduce = false
            state.liveTarget = liveTarget(for: decoder, state)
            // Its provisional level first: a tail mixed into it is scaled by the gain it gets.
            measureOpening(item, decoder, state)
            prepareMix(into: item, decoder, &state)
            giveUpWholeMeasurement(&state)
            measureOnTheWay(item, decoder, &state)
        }
    }

    /// The item decoded ahead was replaced before it was heard: back to the one before it.
    func leaveAbandoned(_ state: inout DecoderState) {
        shared.assertOn(.decoder)
        dropWork(&state)
        giveUpWholeMeasurement(&state)
        let closing = state.decoder
        state.decoder = nil
        state.item = state.previous
        state.previous = nil
        state.finished = true
        state.failedNextID = nil
        shared.decoder.failedNextID = nil
        shared.decoder.itemID = state.item?.id
        shared.lock.unlock()
        withExtendedLifetime(closing) {}  // FFmpeg's release runs here, off the lock
        shared.lock.lock()
    }
}
