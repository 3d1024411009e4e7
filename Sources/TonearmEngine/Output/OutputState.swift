import Foundation
import TonearmMedia
import TonearmSync

/// The output thread's own state (`OutputState`): reachable only from its entry point,
/// `OutputWorker.run`, which passes it down; no lock needed.
extension OutputWorker {
    /// What only the output thread sees; no lock needed.
    struct OutputState {
        /// The open device: owned by this thread alone.
        var device: (any OutputDevice)?
        var devicePaused = false
        var waitingReported = false
        /// Pacing clock: frames counted from `paceAnchor`, consumed at rate × speed.
        var paceAnchor = 0.0
        var pacedFrames = 0
        /// With pacing, frames this wake-up may still write: the device is topped up to
        /// `paceLeadFrames` + `pacedWriteFrames` across chunk ends before the thread sleeps again.
        var paceRoom = 0
        var gain = GainStage()
        /// After a reopen that resumes playing: the frames the device must take (a buffer's
        /// worth) before `device_restored` is announced, and where playback stood when it came
        /// back. A device that opens and then fails within its first buffer (a `file:` device on
        /// an unwritable path) is not announced as back, and what it took was never heard.
        var unconfirmedRestore: (framesToGo: Int, from: (itemID: Int, frame: Int64, sampleRate: Int))?
        /// The last loss announced, and the play/pause intent then: the same loss again, before
        /// the device took a frame and with no play or pause since, is not announced again.
        var announcedLoss: (reason: String, intent: Int)?
        /// A network item ran dry while playing: nothing more is written until it has
        /// `input.prebufferSeconds` again (or its end) in the pipe.
        var refilling = false
        /// The last chunk written was of a network item.
        var writingNetwork = false
        /// At the end of playback, the device was told to hand on what it holds (`drain`);
        /// cleared by every write.
        var endHandedOn = false
        /// A stream title written to the device and not yet heard: announced once the clock
        /// reaches its first frame.
        var titleToAnnounce: (itemID: Int, frame: Int64, title: StreamTitle)?
        /// Writes in a row that the device held none of, unpaced (see `OutputReport.takesBatches`):
        /// one could be a real device that underran at once; two are a sink without a clock.
        var unheldWrites = 0
        /// When the device last had nothing to play (stopped, paused, the queue ended); nil
        /// while it plays. After `releaseAfterSeconds` of it the device is released.
        var idleSince: Double?
        /// The device was closed for idleness: a play opens it again for what is heard next.
        var released = false
        /// The `fadeRequest` and the `duckRequest` in force.
        var fadeSerial = 0
        var duckSerial = 0
        /// A pause fading out (`fadesOnPause`): the frames of its fade still to write; nil when
        /// no pause is fading. And whether the silence after it was written (or is not needed).
        var pauseFadeToWrite: Int?
        /// With a device that can take frames back (and fades on pause): the last frames written,
        /// for a pause that fades out from what is being heard (`fadeOutFromPlayingPoint`).
        var written: WrittenFrames?
        /// A pause faded out ahead of what was written: the pipe's frames after the fade are
        /// void, and the decoder starts again here once the device pauses (or play comes first).
        var refillFrom: (itemID: Int, frame: Int64, sampleRate: Int)?
        var pauseFadePadded = false
        /// Stops the `on_close` hook of the last release if an open comes before it ended.
        var closeHookStop: HookStop?
        /// `output.on_open` ran (or there is none) and the device has not been released since: the
        /// next open needs no hook, and a release runs `output.on_close`.
        var hooksOpened = false
        /// When the lost or awaited device is tried again next.
        var nextReopenAt = 0.0
        /// Set while a loaded item waits for a device that was missing or busy when it was loaded
        /// (`waitForDevice`): why, and the play/pause intent of the last attempt (a new play or pause
        /// tries again at once; otherwise every `reopenInterval`, at `nextReopenAt`).
        var deviceAwaited: (reason: String, intent: Int)?
        /// What callers asked by command (`EngineCommand`), taken at the top of the loop.
        var inbox: [EngineCommand] = []
        /// Software volume as a gain factor (1 = unchanged); the gain ramps to it.
        var volume = 1.0
        /// The latest fade over the volume and duck beside it; applied from the next write when
        /// their serials differ from `fadeSerial` and `duckSerial`.
        var fadeRequest = FadeRequest()
        var duckRequest = FadeRequest()
        /// ReplayGain, applied to every chunk from its item's tags.
        var replayGain = ReplayGainSettings()
        /// Once paused: what the device holds unheard is dropped and decoded again.
        var refillRequested = false
        /// The item after `after` is to be taken back from the device (`takeBack`), if `epoch` is
        /// still the engine's.
        var takeBackAfter: (after: Int, epoch: Int)?
        /// The last item whose final chunk was handed to the device, in `epoch`.
        var lastEnded: (epoch: Int, itemID: Int)?

        init() { inbox.reserveCapacity(16) }
    }
}
