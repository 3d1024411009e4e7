import Foundation
import TonearmMedia
import TonearmSync

/// The decoder thread, one for the engine's life: opens items, decodes them into chunks for the
/// pipe, serves seeks, and decodes the next item ahead while the current one plays. Everything
/// FFmpeg lives on this thread and nowhere else. It holds the engine lock except around FFmpeg
/// calls and copies, and sleeps on its condition when there is nothing to do.
///
/// What only this thread sees is its `DecoderState`, made by `run` and passed down; what the
/// threads share is reached through `shared`, behind its lock.
struct DecoderWorker {
    let shared: EngineControl
    let configuration: OutputConfiguration
    let input: InputConfiguration

    init(shared: EngineControl, configuration: OutputConfiguration, input: InputConfiguration) {
        self.shared = shared
        self.configuration = configuration
        self.input = input
    }
}

extension DecoderWorker {
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
    var readResumeLevel: Double { shared.output.leadSeconds + shared.fillTarget / 10 }

    func start() {
        NamedThread.start("tonearm-decoder") { [self] in run() }
    }

    func run() {
        var state = DecoderState()
        shared.lock.lock()
        shared.recordThread(.decoder)
        while !shared.play.shuttingDown {
            takeCommands(&state)
            if shared.decoder.epoch != shared.epoch {
                takeTarget(&state)
            } else if let item = state.item, shared.items.abandoned.contains(item.id) {
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
                } else if EngineLock.now() < until, !shared.output.awaitsFill, (ahead ?? shared.pipe.bufferedSeconds) > readResumeLevel {
                    shared.lock.waitDecoder(untilMonotonic: until)
                } else {
                    state.readPausedUntil = nil
                }
            } else if state.decoder != nil, !state.finished {
                state.overlayTookTurn = false
                decodeStep(&state)
            } else if state.finished, let item = state.item, let next = shared.next, next.after == item.id,
                next.item.id != state.failedNextID
            {
                openNext(next.item, &state)
            } else if tailIsOrphaned(state) {
                handOnOrphanedTail(&state)
            } else if overlayNeedsWork(state) {
                overlayStep(&state)
            } else {
                state.overlayTookTurn = false
                shared.lock.waitDecoder()
            }
        }
        if let fill = state.fill { shared.pipe.recycle(fill) }
        shared.lock.unlock()
        state.decoder = nil
        state.overlayDecoder = nil
        state.overlayRing = nil
    }

    /// Takes what callers queued for this thread into its own state. Lock held.
    func takeCommands(_ state: inout DecoderState) {
        guard !shared.commands.decoder.isEmpty else { return }
        shared.commands.take(for: .decoder, into: &state.inbox)
        for command in state.inbox {
            switch command {
            case .setCrossfade(let seconds): state.crossfadeSeconds = seconds
            case .setReplayGain(let settings): state.replayGain = settings
            case .setVolume, .fade, .duck, .refillWhilePaused, .takeBack, .forgetLostDevice: break
            }
        }
        state.inbox.removeAll(keepingCapacity: true)
    }

    /// The format chunks of a source are converted to: the configured or followed one, or what
    /// the device granted in its place. Lock held.
    func chunkFormat(for source: PCMFormat) -> PCMFormat {
        let requested = configuration.requestedFormat(forSource: source)
        return shared.output.grantedFormats[requested] ?? requested
    }

    func dropWork(_ state: inout DecoderState) {
        shared.assertOn(.decoder)
        if let fill = state.fill { shared.pipe.recycle(fill) }
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

    /// Decodes the next frames (off the lock) and sets them pending, or marks the end.
    func decodeStep(_ state: inout DecoderState) {
        shared.assertOn(.decoder)
        guard let decoder = state.decoder, let item = state.item else { return }
        let myEpoch = shared.epoch
        keepsTail(&state)
        let destination = inPlaceDestination(decoder, state)
        shared.lock.unlock()
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
        shared.lock.lock()
        if decoder.isNetwork, EngineLock.now() - started > 0.01 {
            // That read waited for the network: the socket is drained. It fills while what is
            // decoded plays down to `readResumeLevel` (at most a second), then is read in one go.
            let ahead = secondsAheadOfHeard(item, decoder, state)
            let pause = min(Self.longestNetworkReadPause, ahead - readResumeLevel)
            if ahead >= shared.fillTarget * 0.75 && pause >= Self.shortestNetworkReadPause {
                state.readPausedUntil = EngineLock.now() + pause
            }
        }
        guard shared.epoch == myEpoch, !shared.items.abandoned.contains(item.id) else { return }
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
                shared.post(.loudnessMeasured(itemID: item.id, url: item.url, measured))
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
    func secondsAheadOfHeard(_ item: EngineItem, _ decoder: MediaDecoder, _ state: DecoderState) -> Double {
        let heard = shared.clock.heard(now: EngineLock.now())
        guard heard.itemID == item.id, heard.sampleRate > 0 else { return shared.pipe.bufferedSeconds }
        let decodedTo = decoder.nextFramePosition + state.positionBase
        return max(0, Double(decodedTo - heard.frame) / Double(heard.sampleRate))
    }

    func fail(_ item: EngineItem, _ failure: EngineFailure, _ state: inout DecoderState) {
        shared.assertOn(.decoder)
        dropWork(&state)
        giveUpWholeMeasurement(&state)
        state.decoder = nil
        state.item = nil
        shared.decoder.itemID = nil
        if shared.heardItemID == item.id || item.id == shared.target?.item.id { shared.publish { $0.status = .failed(failure) } }
        shared.post(.failed(itemID: item.id, failure))
    }

}
