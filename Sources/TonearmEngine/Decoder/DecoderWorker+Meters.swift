import TonearmMedia

/// The decoder thread's meters: the whole loudness of an item measured on the way (it started
/// unmeasured, from its beginning) and a live stream's automatic gain. Both are made, fed and
/// freed on the decoder thread, off the engine lock, from the frames it decodes anyway.
extension DecoderWorker {
    /// Measures an item from the frames it decodes, if it asked for that and is still not
    /// measured. Lock held.
    func measureOnTheWay(_ item: EngineItem, _ decoder: MediaDecoder, _ state: inout DecoderState) {
        guard item.measuresOnTheWay, !decoder.isNetwork, shared.knownItem(item.id)?.loudness == nil else { return }
        state.wholeItem = item
    }

    /// How much of an item's opening is measured for its provisional level.
    static let openingSeconds = 6.0

    /// An item opened with its loudness not known, under a mode that would level it by loudness
    /// (`measuresOpening`, and no tags it would take instead), is leveled provisionally by its
    /// opening: its first `openingSeconds`, measured now on a decoder of its own, before any of
    /// its frames is pushed (a few tens of ms, once per item). The output takes it at the item's
    /// first write, unless the whole measurement landed first, and keeps it to the item's end.
    /// Lock held; released around the measurement.
    func measureOpening(_ item: EngineItem, _ decoder: MediaDecoder, _ state: DecoderState) {
        // Ids increase: an item at or before the one written last has its level already.
        guard item.measuresOpening, !decoder.isNetwork, (shared.output.loudnessInForce?.itemID ?? .min) < item.id,
            let known = shared.knownItem(item.id), known.loudness == nil, known.openingLoudness == nil,
            state.replayGain.gain(tags: decoder.info.replayGain, loudness: nil, prefersAlbum: item.prefersAlbumGain).source == .pending
        else { return }
        let myEpoch = shared.epoch
        let cancellation = shared.decoder.cancellation
        shared.lock.unlock()
        let opening = Loudness.measureOpening(item.url, seconds: Self.openingSeconds, input: input, cancellation: cancellation)
        shared.lock.lock()
        guard shared.epoch == myEpoch, let opening, (shared.output.loudnessInForce?.itemID ?? .min) < item.id,
            let index = shared.items.known.lastIndex(where: { $0.id == item.id }), shared.items.known[index].loudness == nil
        else { return }
        shared.items.known[index].openingLoudness = .measured(opening)
    }

    /// Posts that the measurement on the way was given up, if one was wanted. Lock held.
    func giveUpWholeMeasurement(_ state: inout DecoderState) {
        guard let item = state.wholeItem else { return }
        state.wholeItem = nil
        shared.post(.loudnessMeasured(itemID: item.id, url: item.url, nil))
    }

    /// The automatic gain's target for a decoder's item, if it gets one. Lock held.
    func liveTarget(for decoder: MediaDecoder, _ state: DecoderState) -> Double? {
        decoder.isNetwork && state.replayGain.live == .agc ? state.replayGain.targetLUFS : nil
    }

    /// Makes or drops the meter of the item measured on the way as `wholeItem` says. Lock not
    /// held (a meter is allocated and freed here).
    func followWholeItem(_ item: EngineItem, _ state: inout DecoderState) {
        guard state.wholeItem?.id == item.id else {
            state.wholeMeter = nil
            return
        }
        if state.wholeMeter == nil {
            state.wholeMeter = LoudnessMeter(channels: state.format.channels, sampleRate: state.format.sampleRate)
        }
    }

    /// Makes, keeps or drops the open item's automatic gain as `liveTarget` says. Lock not held
    /// (a meter is allocated and freed here).
    func followLiveTarget(_ item: EngineItem, _ state: inout DecoderState) {
        guard let target = state.liveTarget else {
            state.live = nil
            return
        }
        if state.live?.itemID != item.id || state.live?.format != state.format {
            state.live = LiveLeveler(itemID: item.id, format: state.format, target: target)
        }
    }

    /// Feeds the meters the frames just decoded (in the chunk, or in `scratch`); at the end of
    /// the item, its measurement on the way. Lock not held.
    func feedMeters(
        _ result: Result<MediaDecoder.Chunk, EngineFailure>, _ destination: MediaDecoder.Destination?,
        _ decoder: MediaDecoder, _ state: inout DecoderState
    ) -> LoudnessMeasurement? {
        switch result {
        case .success(.frames(let count, _, let inDestination)):
            if state.live != nil || state.wholeMeter != nil,
                let samples = inDestination ? destination.map({ UnsafeRawPointer($0.bytes) }) : UnsafeRawPointer(decoder.scratch)
            {
                state.live?.add(samples, frames: count)
                state.wholeMeter?.add(samples, type: state.format.sampleType, frames: count)
            }
            return nil
        case .success(.endOfStream):
            return state.wholeMeter.map { meter in meter.result().map { .measured($0) } ?? .silent }
        case .failure:
            return nil
        }
    }
}
