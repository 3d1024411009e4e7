import Foundation
import TonearmMedia
import TonearmSync

/// The decoder thread, one for the engine's life: opens items, decodes them into chunks for the
/// pipe, serves seeks, and decodes the next item ahead while the current one plays. Everything
/// FFmpeg lives on this thread and nowhere else. It holds the engine lock except around FFmpeg
/// calls and copies, and sleeps on its condition when there is nothing to do.
extension EngineControl {
    /// What only the decoder thread sees; no lock needed.
    struct DecoderState {
        var decoder: MediaDecoder?
        var item: EngineItem?
        /// The item decoded before `item` when `item` was opened as its `next`.
        var previous: EngineItem?
        /// The format chunks of `item` carry (what the device was or will be asked for).
        var format = PCMFormat(sampleType: .s16, sampleRate: 44100, channels: 2)
        /// The chunk being filled; the decoder holds it until it pushes or recycles it.
        var fill: PCMChunk?
        /// Marks the next chunk pushed as the first of a run.
        var runStart: RunStart?
        /// Frames before this track frame are dropped (a sample-exact start or seek).
        var discardBefore: Int64?
        /// Converted frames in `decoder.scratch` not yet copied into chunks.
        var pendingFrames = 0
        var pendingOffset = 0
        var pendingPosition: Int64 = 0
        /// No frame was produced since the open, and it opened at the start: an empty stream is an error.
        var mustProduce = false
        /// The item was decoded to its end; an end marker must still be pushed when `endPending`.
        var finished = false
        var endPending = false
        /// A `next` item that failed to open: not tried again for the same `next`.
        var failedNextID: Int?
        /// Set while a network item's dropped connection is being regained.
        var reconnect: Reconnect?
        /// A reconnect that opened (and seeked) again, until audio past where it stopped is
        /// decoded: its decoder's deadlines stay capped by the window, and a drop meanwhile
        /// continues the same outage.
        var regaining: Reconnect?
        /// Added to a live stream's frame positions: a reconnect starts its count again at 0, and
        /// the item's position goes on from where it stopped.
        var positionBase: Int64 = 0
        /// A stream title read with the pending frames: the chunk they start goes with it.
        var streamTitle: StreamTitle?
        /// Reading a network source is paused until then (see `networkReadPause`).
        var readPausedUntil: Double?
        /// Frames of the last chunk pushed: an output that has nothing gets the next partial chunk
        /// once it holds twice as many (see `place`).
        var lastPushedFrames = 0
        /// The target of the open item's automatic gain: set at open for a network item under
        /// `replay_gain.live = "agc"`, nil otherwise. `live` follows it off the lock.
        var liveTarget: Double?
        var live: LiveLeveler?
        /// The item measured on the way (`EngineItem.measuresOnTheWay`), from its first frame to
        /// its end; `wholeMeter` follows it off the lock. A seek or another target gives it up.
        var wholeItem: EngineItem?
        var wholeMeter: LoudnessMeter?
        /// The open item's newest frames, kept back from the pipe while it nears an end that
        /// crossfades; and the tail of the item before it, mixed into its first frames.
        var gathering = CrossfadeTail()
        var mixing = CrossfadeTail()
        /// The item ended with a tail kept back and no next named: it is handed on by then.
        var tailDeadline: Double?
        /// Frames of the open item mixed with the tail before it so far.
        var mixedFrames = 0
        /// The open item is decoded in a format a crossfade chose (the device's), not its own.
        var formatForced = false
        /// Where the pending frames are when not in `decoder.scratch` (a tail faded out).
        var pendingSource: UnsafeMutableRawPointer?
        /// The clip mixed over the music (`DecoderWorker+Overlay`): its decoder, the request it
        /// serves, and its converted frames in its `scratch` not yet in its ring.
        var overlayDecoder: MediaDecoder?
        var overlaySerial = 0
        var overlayPending = 0
        var overlayPendingOffset = 0
        /// Filling the clip's ring up to the brim (it started at half empty).
        var overlayFilling = false
        /// The last step was the clip's: the music's work, if any, goes next.
        var overlayTookTurn = false
        /// The clip's ring, held here too so that it is let go on this thread.
        var overlayRing: OverlayRing?
    }

    /// How far the decoder runs ahead of what is heard at least: enough to open the next item well
    /// before the current one ends (gapless), little enough that a file changing on disk is noticed
    /// soon. It refills at half (see `pipeIsHalfEmpty`), so it decodes in bursts of half this,
    /// each started cold after a sleep: longer bursts cost less per second of audio, and 4 s
    /// brings paced decoding close to the cost of decoding unpaced (docs/performance.md).
    static let decodeAheadSeconds = 4.0

    /// The pipe level the decoder fills to: `decodeAheadSeconds` for a file; for a network
    /// source its prebuffer (at least 1 s): more than that waits in the socket. Lock held.
    var fillTarget: Double { decodingNetwork ? max(input.prebufferSeconds, 1) : decodeAheadSeconds }

    /// Lock held.
    var pipeIsFull: Bool { pipe.freeCount == 0 || pipe.bufferedSeconds >= fillTarget }
    var pipeIsHalfEmpty: Bool { pipe.freeCount >= pipe.capacity / 2 && pipe.bufferedSeconds <= fillTarget / 2 }

    /// A stream that arrives in real time would wake the decoder at every packet the network
    /// brings (tens a second). Once a read had to wait for the network and three quarters of the
    /// target are decoded and not yet heard, the decoder stops reading for a while (at most this long): what
    /// arrives meanwhile waits in the socket and is read in one go.
    static let longestNetworkReadPause = 1.0
    /// Shorter pauses than this are not worth a wake-up of their own.
    static let shortestNetworkReadPause = 0.05

    /// Decoded audio not yet heard below which a paused network read goes on: what the output
    /// may hold ahead of the clock (it cannot be in the pipe then) and a tenth of the target,
    /// time enough to read and decode what waited in the socket (it is there already: pausing
    /// moves audio from the pipe to the socket, the total ahead stays the same).
    /// Lock held.
    var readResumeLevel: Double { outputLeadSeconds + fillTarget / 10 }

    func startDecoderThread() {
        NamedThread.start("tonearm-decoder") { [self] in runDecoder() }
    }

    private func runDecoder() {
        var state = DecoderState()
        lock.lock()
        recordThread(.decoder)
        while !shuttingDown {
            if decoderEpoch != epoch {
                takeTarget(&state)
            } else if let item = state.item, abandoned.contains(item.id) {
                leaveAbandoned(&state)
            } else if !state.overlayTookTurn, overlayNeedsWork(state, urgent: true) {
                overlayStep(&state)
            } else if state.pendingFrames > 0 || state.endPending {
                state.overlayTookTurn = false
                place(&state)
            } else if state.reconnect != nil {
                reconnectStep(&state)
            } else if let until = state.readPausedUntil {
                // Woken early by the output (the pipe ran low) or a prebuffer wait: read at once.
                // While the music's reading rests, a clip over it takes its turns.
                let ahead = state.item.flatMap { item in state.decoder.map { secondsAheadOfHeard(item, $0, state) } }
                if overlayNeedsWork(state) {
                    overlayStep(&state)
                } else if EngineLock.now() < until, !outputAwaitsFill, (ahead ?? pipe.bufferedSeconds) > readResumeLevel {
                    lock.waitDecoder(untilMonotonic: until)
                } else {
                    state.readPausedUntil = nil
                }
            } else if state.decoder != nil, !state.finished {
                state.overlayTookTurn = false
                decodeStep(&state)
            } else if state.finished, let item = state.item, let next, next.after == item.id,
                next.item.id != state.failedNextID
            {
                openNext(next.item, &state)
            } else if tailIsOrphaned(state) {
                handOnOrphanedTail(&state)
            } else if overlayNeedsWork(state) {
                overlayStep(&state)
            } else {
                state.overlayTookTurn = false
                lock.waitDecoder()
            }
        }
        if let fill = state.fill { pipe.recycle(fill) }
        lock.unlock()
        state.decoder = nil
        state.overlayDecoder = nil
        state.overlayRing = nil
    }

    /// The format chunks of a source are converted to: the configured or followed one, or what
    /// the device granted in its place. Lock held.
    private func chunkFormat(for source: PCMFormat) -> PCMFormat {
        let requested = configuration.requestedFormat(forSource: source)
        return grantedFormats[requested] ?? requested
    }

    private func dropWork(_ state: inout DecoderState) {
        assertOn(.decoder)
        if let fill = state.fill { pipe.recycle(fill) }
        state.fill = nil
        state.pendingFrames = 0
        state.endPending = false
        state.runStart = nil
        state.discardBefore = nil
        state.reconnect = nil
        if state.regaining != nil { state.decoder?.cancellation.uncap() }
        state.regaining = nil
        state.positionBase = 0
        state.readPausedUntil = nil
        state.gathering.clear()
        state.tailDeadline = nil
        state.pendingSource = nil
    }

    /// Takes up the current epoch's target: nothing (stop), a seek within the open item, or a new item.
    private func takeTarget(_ state: inout DecoderState) {
        assertOn(.decoder)
        decoderEpoch = epoch
        let myEpoch = epoch
        dropWork(&state)
        giveUpWholeMeasurement(&state)
        state.finished = false
        state.failedNextID = nil
        decoderFailedNextID = nil
        state.previous = nil
        state.mixing.clear()
        guard let target else {
            decoderItemID = nil
            state.item = nil
            let closing = state.decoder
            state.decoder = nil
            lock.unlock()
            withExtendedLifetime(closing) {}  // FFmpeg's release runs here, off the lock
            lock.lock()
            return
        }
        decoderItemID = target.item.id
        var reuse = state.item?.id == target.item.id ? state.decoder : nil
        let reused = reuse != nil
        // A seek within the open item keeps its decoder, whose I/O answers to its own flag.
        let cancellation = reuse?.cancellation ?? CancellationFlag()
        cancellation.reset()
        decoderCancellation = cancellation
        // An item decoded in the format of a crossfade keeps it through a seek (no reopen mid-item).
        var format = reuse.map { state.formatForced ? grantedFormats[state.format] ?? state.format : chunkFormat(for: $0.sourceFormat) }
        if reuse == nil { state.formatForced = false }
        let opened: Result<(MediaDecoder, Int64), EngineFailure>
        lock.unlock()
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
        lock.lock()
        guard epoch == myEpoch else {
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
            decoderItemID = nil
            publish { $0.status = .failed(failure) }
            post(.failed(itemID: target.item.id, failure))
        case .success(let (decoder, startFrame)):
            if reuse !== decoder || reuse == nil { noteOpened(target.item, decoder) }
            state.decoder = decoder
            state.item = target.item
            state.format = format ?? decoder.outputFormat
            state.runStart = target.runStart
            state.discardBefore = startFrame > 0 ? startFrame : nil
            state.pendingPosition = startFrame
            state.mustProduce = startFrame == 0 && target.runStart == .opened
            state.liveTarget = liveTarget(for: decoder)
            if !reused, startFrame == 0, target.runStart == .opened { measureOnTheWay(target.item, decoder, &state) }
            if !reused { measureOpening(target.item, decoder) }
        }
    }

    /// Opens an item's file and prepares conversion; seeks when `startSeconds` > 0. Lock not held.
    /// `forcing` a format decodes in it whatever the source (the next item of a crossfade).
    private func openDecoder(
        _ item: EngineItem, cancellation: CancellationFlag, startSeconds: Double,
        forcing forced: PCMFormat? = nil,
        format: inout PCMFormat?
    ) -> Result<(MediaDecoder, Int64), EngineFailure> {
        do throws(EngineFailure) {
            let decoder = try MediaDecoder(url: item.url, input: input, cancellation: cancellation)
            let chosen = forced ?? lock.withLock { chunkFormat(for: decoder.sourceFormat) }
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
    private static func clampedFrame(_ decoder: MediaDecoder, seconds: Double, rate: Int) -> Int64 {
        var frame = Int64((max(0, seconds) * Double(rate)).rounded())
        if let duration = decoder.info.duration { frame = min(frame, Int64((duration * Double(rate)).rounded())) }
        return frame
    }

    /// Seeks the open decoder. Some demuxers refuse to seek once they reached the end of the file
    /// (FLAC answers EPERM): then the file is opened again and the seek made on the fresh one.
    private func seek(
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
    private func noteOpened(_ item: EngineItem, _ decoder: MediaDecoder) {
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
        let heard = heardItemID
        infos.removeAll { $0.itemID != heard && $0.itemID != item.id && $0.itemID < (heard ?? 0) }
        if infos.count >= 8 { infos.removeFirst() }
        infos.append((item.id, info))
        post(.opened(itemID: item.id, info))
    }

    /// Opens the item that follows the one just decoded, for a gapless join.
    private func openNext(_ item: EngineItem, _ state: inout DecoderState) {
        assertOn(.decoder)
        let myEpoch = epoch
        let previous = state.item
        decoderItemID = item.id
        let cancellation = CancellationFlag()
        decoderCancellation = cancellation
        // Crossfading into it: it is converted to the format of the tail it is mixed with; and
        // while crossfades are on, an item after one so converted stays in that format too.
        let forced =
            formatForNext(after: previous, state)
            ?? (state.formatForced && crossfadeSeconds > 0 ? state.format : nil)
        lock.unlock()
        state.decoder = nil
        var format: PCMFormat?
        let opened = openDecoder(item, cancellation: cancellation, startSeconds: 0, forcing: forced, format: &format)
        lock.lock()
        guard epoch == myEpoch else { return }
        switch opened {
        case .failure(let failure):
            // The previous item stays the last decoded one; the player decides what follows it now.
            state.item = previous
            state.finished = true
            state.failedNextID = item.id
            decoderFailedNextID = item.id
            decoderItemID = previous?.id
            if !abandoned.contains(item.id) { post(.failed(itemID: item.id, failure)) }
            lock.wakeOutput()
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
            state.liveTarget = liveTarget(for: decoder)
            // Its provisional level first: a tail mixed into it is scaled by the gain it gets.
            measureOpening(item, decoder)
            prepareMix(into: item, decoder, &state)
            giveUpWholeMeasurement(&state)
            measureOnTheWay(item, decoder, &state)
        }
    }

    /// The item decoded ahead was replaced before it was heard: back to the one before it.
    private func leaveAbandoned(_ state: inout DecoderState) {
        assertOn(.decoder)
        dropWork(&state)
        giveUpWholeMeasurement(&state)
        let closing = state.decoder
        state.decoder = nil
        state.item = state.previous
        state.previous = nil
        state.finished = true
        state.failedNextID = nil
        decoderFailedNextID = nil
        decoderItemID = state.item?.id
        lock.unlock()
        withExtendedLifetime(closing) {}  // FFmpeg's release runs here, off the lock
        lock.lock()
    }

    /// Decodes the next frames (off the lock) and sets them pending, or marks the end.
    private func decodeStep(_ state: inout DecoderState) {
        assertOn(.decoder)
        guard let decoder = state.decoder, let item = state.item else { return }
        let myEpoch = epoch
        keepsTail(&state)
        let destination = inPlaceDestination(decoder, state)
        lock.unlock()
        followLiveTarget(item, &state)
        followWholeItem(item, &state)
        let started = decoder.isNetwork ? EngineLock.now() : 0
        let result: Result<MediaDecoder.Chunk, EngineFailure>
        do throws(EngineFailure) { result = .success(try decoder.decodeNext(into: destination)) } catch { result = .failure(error) }
        // The item's own frames are measured, then the tail before it is mixed in.
        let measured = feedMeters(result, destination, decoder, &state)
        if case .success(.frames(let count, _, let inDestination)) = result,
            let frames = inDestination ? destination?.bytes : decoder.scratch
        {
            mixTail(into: frames, count: count, decoder, &state)
        }
        lock.lock()
        if decoder.isNetwork, EngineLock.now() - started > 0.01 {
            // That read waited for the network: the socket is drained. It fills while what is
            // decoded plays down to `readResumeLevel` (at most a second), then is read in one go.
            let ahead = secondsAheadOfHeard(item, decoder, state)
            let pause = min(Self.longestNetworkReadPause, ahead - readResumeLevel)
            if ahead >= fillTarget * 0.75 && pause >= Self.shortestNetworkReadPause {
                state.readPausedUntil = EngineLock.now() + pause
            }
        }
        guard epoch == myEpoch, !abandoned.contains(item.id) else { return }
        switch result {
        case .success(.frames(let count, let decodedPosition, inDestination: true)):
            // Converted straight into the chunk being filled: nothing to copy.
            guard let chunk = state.fill else { return }
            chunk.frames += count
            state.pendingPosition = decodedPosition + state.positionBase + Int64(count)
            state.mustProduce = false
            pushIfDue(chunk, &state)
        case .success(.frames(let count, let decodedPosition, inDestination: false)):
            let position = decodedPosition + state.positionBase
            var skip = 0
            if let target = state.discardBefore {
                if position + Int64(count) <= target { return }
                skip = Int(max(0, target - position))
                state.discardBefore = nil
            }
            if state.regaining != nil {
                // New audio: the connection is regained, and its reads have their own deadlines again.
                state.regaining = nil
                decoder.cancellation.uncap()
            }
            if let title = decoder.takeStreamTitle() { state.streamTitle = StreamTitle(streamTitle: title) }
            state.pendingSource = nil
            state.pendingFrames = count - skip
            state.pendingOffset = skip
            state.pendingPosition = position + Int64(skip)
            state.mustProduce = false
        case .success(.endOfStream):
            if state.regaining != nil {
                // The end came instead of new audio: the outage is over with the item.
                state.regaining = nil
                decoder.cancellation.uncap()
            }
            if fadeOutRestOfTail(decoder, &state) { return }
            if state.mustProduce {
                fail(item, EngineFailure(.decodeFailed, "no audio could be decoded from \(item.path)"), &state)
                return
            }
            state.finished = true
            state.endPending = true
            if let whole = state.wholeItem, whole.id == item.id {
                // nil: no meter could be made for its format.
                state.wholeItem = nil
                post(.loudnessMeasured(itemID: item.id, url: item.url, measured))
            }
        case .failure(let failure) where failure.kind == .network && decoder.isNetwork:
            startReconnect(item, decoder, failure, &state)
        case .failure(let failure):
            fail(item, failure, &state)
        }
    }

    /// How much of `item` is decoded and not yet heard: from the frame heard now to the decoder's
    /// next frame, so the pipe, the decoder's partial chunk and what the output wrote ahead of
    /// the clock all count (the pipe alone misses what the output took, which grows with the
    /// size of its writes). While another item is heard (this one decoded ahead), the pipe.
    /// Lock held.
    private func secondsAheadOfHeard(_ item: EngineItem, _ decoder: MediaDecoder, _ state: DecoderState) -> Double {
        let heard = clock.heard(now: EngineLock.now())
        guard heard.itemID == item.id, heard.sampleRate > 0 else { return pipe.bufferedSeconds }
        let decodedTo = decoder.nextFramePosition + state.positionBase
        return max(0, Double(decodedTo - heard.frame) / Double(heard.sampleRate))
    }

    func fail(_ item: EngineItem, _ failure: EngineFailure, _ state: inout DecoderState) {
        assertOn(.decoder)
        dropWork(&state)
        giveUpWholeMeasurement(&state)
        state.decoder = nil
        state.item = nil
        decoderItemID = nil
        if heardItemID == item.id || item.id == target?.item.id { publish { $0.status = .failed(failure) } }
        post(.failed(itemID: item.id, failure))
    }

    /// Copies pending frames into chunks and pushes them; at the end, pushes the end marker.
    private func place(_ state: inout DecoderState) {
        assertOn(.decoder)
        guard let item = state.item, let decoder = state.decoder else {
            dropWork(&state)
            return
        }
        if state.streamTitle != nil, let fill = state.fill, fill.frames > 0 {
            // A new title starts with a chunk of its own, so that it is heard at its first frame.
            pipe.push(fill)
            state.fill = nil
            lock.wakeOutput()
        }
        decodingNetwork = decoder.isNetwork
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
                if let until { lock.waitDecoder(untilMonotonic: until) } else { lock.waitDecoder() }
                return
            }
        }
        if state.fill == nil {
            guard !pipeIsFull, let chunk = pipe.takeFree() else {
                // Full: sleep until it is half empty (hysteresis), so that the decoder wakes about
                // once a second however small the codec's frames are. The output thread wakes us
                // (a clip over the music, at half of its ring, too: that is served meanwhile).
                let myEpoch = epoch
                while !pipeIsHalfEmpty, epoch == myEpoch, !shuttingDown, !abandoned.contains(item.id),
                    !overlayNeedsWork(state, urgent: true)
                {
                    lock.waitDecoder()
                }
                return
            }
            // Frames kept back come before the pending ones.
            let position = state.pendingPosition - Int64(tail?.count ?? 0)
            chunk.reset(
                epoch: epoch, itemID: item.id, format: state.format, position: position,
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
            lock.unlock()
            tail.takeOldest(into: destination, frames: count)
            lock.lock()
            chunk.frames += count
            pushIfDue(chunk, &state)
            return
        }
        let count = min(chunk.capacityFrames - chunk.frames, state.pendingFrames)
        if count > 0 {
            let source = (state.pendingSource ?? decoder.scratch) + state.pendingOffset * bytesPerFrame
            let destination = chunk.bytes + chunk.frames * bytesPerFrame
            lock.unlock()
            destination.copyMemory(from: source, byteCount: count * bytesPerFrame)
            lock.lock()
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
    private func inPlaceDestination(_ decoder: MediaDecoder, _ state: DecoderState) -> MediaDecoder.Destination? {
        guard let chunk = state.fill, state.discardBefore == nil, state.pendingFrames == 0, !decoder.isNetwork,
            state.gathering.itemID != state.item?.id,
            chunk.format == decoder.outputFormat, chunk.frames < chunk.capacityFrames
        else { return nil }
        return MediaDecoder.Destination(
            bytes: chunk.bytes + chunk.frames * chunk.format.bytesPerFrame,
            frames: chunk.capacityFrames - chunk.frames)
    }

    /// Pushes the chunk being filled when it is due (lock held).
    private func pushIfDue(_ chunk: PCMChunk, _ state: inout DecoderState) {
        assertOn(.decoder)
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
        // A device without a clock (see `outputTakesBatches`) is never short of audio: it gets
        // full chunks, and is woken once half the pipe's target is there, or at an item's end.
        let outputHasNothing = pipe.isEmpty && !outputTakesBatches
        let starvedHandOff = min(chunk.capacityFrames, max(chunk.capacityFrames / 16, 2 * state.lastPushedFrames))
        if ending || chunk.frames == chunk.capacityFrames || chunk.runStart != nil
            || (outputHasNothing && chunk.frames >= starvedHandOff)
        {
            chunk.endsItem = ending
            pipe.push(chunk)
            state.fill = nil
            state.lastPushedFrames = chunk.frames
            if ending {
                state.endPending = false
            }
            let batchReady =
                outputTakesBatches
                && (ending || pipe.freeCount == 0 || pipe.bufferedSeconds >= fillTarget / 2)
            // The output needs waking only when it may be waiting for this chunk: it had nothing,
            // or the chunk starts a run. Otherwise it reaches the chunk in its own time.
            if outputHasNothing || chunk.runStart != nil || outputAwaitsFill || batchReady { lock.wakeOutput() }
        }
    }
}
