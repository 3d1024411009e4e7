import Foundation
import TonearmMedia
import TonearmSync

/// The decoder thread's own state (`DecoderState`): reachable only from its entry point,
/// `DecoderWorker.run`, which passes it down; no lock needed.
extension DecoderWorker {
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
        /// What callers asked by command (`EngineCommand`), taken at the top of the loop.
        var inbox: [EngineCommand] = []
        /// How long an item and the next overlap, seconds (0: gapless joins).
        var crossfadeSeconds = 0.0
        /// ReplayGain: whether an item will be leveled by loudness, and a live stream's gain.
        var replayGain = ReplayGainSettings()

        init() { inbox.reserveCapacity(16) }
    }
}
