import TonearmMedia

/// What the output thread tells the others: written by it alone (engine lock held; debug builds
/// check the writer, see `EngineControl.output`), read by anyone holding the lock.
struct OutputReport {
    /// The output waits for a network item's audio to fill up to `input.prebufferSeconds`: the
    /// decoder wakes it at every chunk it pushes until then.
    var awaitsFill = false
    /// The open device is not clocked: it took writes and held none of them (ALSA's `null` and
    /// `file` plugins, unpaced), so it can never run short. Waking the output for each chunk
    /// would only cost (two context switches a chunk: a quarter of a Vorbis decode's CPU on a
    /// 2-vCPU VM), so the decoder hands it audio half a pipe at a time (see `place`). Cleared
    /// when the device closes; a write the device holds part of clears it too.
    var takesBatches = false
    /// The most audio the open device may hold ahead of what is heard, in track seconds: a
    /// paced write beyond the pace's lead, or the device's buffer (see `adoptDevice`). A network
    /// source's reads pause only while more than this is decoded (`DecoderWorker.decodeStep`).
    /// 0 when closed.
    var leadSeconds = 0.0
    /// When the clock last stopped consuming (a pause carried out, a run parked ready).
    var stoppedConsumingAt = 0.0
    /// The open device can take back frames it holds unheard (`OutputDevice.rewind`), and how
    /// soon the output thread acts on a take-back at worst (it may be in a blocking write of a
    /// period). false and 0 when closed.
    var rewinds = false
    var responseSeconds = 0.0
    /// The loudness the output levels the item it writes with (`provisional`: its opening's):
    /// taken from the known items at the item's first write (`leveling`) and kept until another
    /// item is written.
    var loudnessInForce: (itemID: Int, measurement: LoudnessMeasurement?, provisional: Bool)?
    /// The automatic gain of the live stream chunk written last (nil: none).
    var liveGainInForce: Double?
    /// The epoch whose first chunk the output has acted on (device prepared, news posted).
    var epoch = -1
    /// Playback reached the end after this item in this epoch: nothing followed it.
    var chainEnded: (epoch: Int, after: Int)?
    /// The item of the last chunk handed to the device.
    var lastWrittenItem: Int?
    /// Frames the device has taken since the engine started: proof that the output thread is not
    /// wedged (the service watchdog reads it).
    var framesWritten = 0
    /// The device's format while it is open (or lost and being reopened); nil when closed.
    var deviceFormat: PCMFormat?
    var deviceOpen = false
    /// Set while the device is gone: why.
    var deviceLostReason: String?
    /// What the device granted when asked for a format it could not play as is; the decoder
    /// converts to the granted one from then on.
    var grantedFormats: [PCMFormat: PCMFormat] = [:]
    /// The fade whose last frame the output wrote last, and when that frame is heard.
    var fadeHeardAt: (serial: Int, at: Double)?
    /// The output thread has closed the device, run its closing hook and left (shutdown);
    /// `waitUntilShutDown` waits for it.
    var finished = false
}

/// What the decoder thread tells the others: written by it alone (engine lock held; debug builds
/// check the writer, see `EngineControl.decoder`), read by anyone holding the lock.
struct DecoderReport {
    /// The item the decoder is opening, decoding or has decoded to its end; nil when idle.
    var itemID: Int?
    /// The epoch the decoder last took up.
    var epoch = -1
    /// The `next` item that failed to open; the decoder waits for another `next`.
    var failedNextID: Int?
    /// The item the decoder fills the pipe with is read over the network (see `fillTarget`).
    var network = false
    /// Media info of items opened and not yet left behind (the heard one and those decoded ahead).
    var infos: [(itemID: Int, info: MediaInfo)] = []
    /// Lets blocking FFmpeg I/O give up when what it serves is no longer wanted. The decoder
    /// installs a fresh one for each open; callers cancel it on an epoch change.
    var cancellation = CancellationFlag()

    init() { infos.reserveCapacity(8) }
}
