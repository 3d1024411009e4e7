import TonearmMedia

/// What callers want of the sound, and since when. Engine lock.
struct PlayIntent {
    /// Whether the user wants sound. Written by callers, and by the output thread at the end and
    /// when the device is lost or restored.
    var requested = false
    /// Bumped by every play and pause command (callers); output news carries the value it acted on.
    var intent = 0
    /// When sound was asked for (callers, and the output thread on a restore); the output thread
    /// clears it when it reports the first audio.
    var requestedAt: Double?
    /// When the latest pause was asked (callers): from then on the position holds, even before
    /// the output thread has paused the device (with pacing, the output pauses its clock at this
    /// instant). A pause that fades out (`fadesOnPause`) sets it to infinity, and the output
    /// thread sets it to when the fade is heard once it has written it (`fadeOutForPause`).
    var pauseRequestedAt = 0.0
    /// Where a pause that fades out will stand: the track frame its fade ends on, known once the
    /// output thread planned the fade (the output thread sets it, callers clear it with a new
    /// play or pause). While that pause is pending the position reads as this: the pause is
    /// answered at once, with the place it stops at, not after what the device holds is heard.
    var pauseStandsAt: (epoch: Int, itemID: Int, frame: Int64, sampleRate: Int)?
    /// Play once a lost device is back (it was playing, or play was asked meanwhile). Written by
    /// the output thread when the device goes and comes back; cleared by callers' pause and stop.
    var resumeOnRestore = false
    /// The engine is shutting down (callers, `shutdown`): nothing plays again, and both threads
    /// leave when they see it.
    var shuttingDown = false
}

/// The items callers named. Engine lock.
struct ItemBook {
    /// The last items named by callers (loads and nexts), so a rewind can decode one again, and
    /// where the output finds an item's loudness. Callers (`setLoudness` updates one in place),
    /// and the decoder thread (an item's `openingLoudness`).
    var known: [EngineItem] = []
    /// Items decoded ahead and replaced before they were heard: the output drops their chunks and
    /// the decoder leaves them. Written by callers; emptied by `beginEpoch` (any thread).
    var abandoned: [Int] = []

    init() {
        known.reserveCapacity(8)
        abandoned.reserveCapacity(16)
    }
}

/// A clip mixed over the music. Engine lock.
struct OverlayShared {
    /// The clip asked, and a serial that tells each request from the one before. Set and cleared
    /// by callers (`playOverlay`, `stopOverlay`); cleared by the decoder thread when the clip
    /// cannot be opened, and by whichever thread ends it (`endOverlay`). The decoder thread opens
    /// what it names.
    var request: (item: EngineItem, gain: Double)?
    var serial = 0
    /// The clip's ring once the decoder thread opened it (it publishes and fills it); mixed by the
    /// output thread, which clears it at its end or at the end of its fade-out; a new request
    /// (callers) replaces it at once; `endOverlay` clears it from either thread.
    var ring: OverlayRing?
    /// Lets the clip's blocking I/O give up: withdrawn, replaced, or past its deadline.
    let cancellation = CancellationFlag()
}

/// Callers waiting for something the output thread brings about. Engine lock.
struct EngineWaits {
    /// Waiting for a pause to take effect (`pauseTakesEffect`): resumed by the output thread once
    /// it knows where the pause stands (`pauseStandsAt`), or none is pending (paused, played
    /// again, stopped), or at shutdown.
    var pause: [CheckedContinuation<Void, Never>] = []
    /// Waiting for a fade to be heard (`fadeHeard`), with its serial: appended by callers,
    /// resumed by the output thread (`OutputFadeHeard`).
    var fades: [(serial: Int, continuation: CheckedContinuation<Void, Never>)] = []
    /// The serials of the latest fade and duck asked (`PlayerEngine.fade`, `duck`): a fade
    /// waited for is over once a newer one replaced it.
    var latestFade = 0
    var latestDuck = 0
}
