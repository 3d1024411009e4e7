/// One loaded media item: its decoder thread, its ring, its device. A `load` creates a new
/// session and cancels the previous one; sessions never come back.
///
/// `@unchecked Sendable`: every `var` is read and written only with the engine's `EngineLock`
/// held. `output` and `ring` are created by the decoder thread, borrowed by the output thread
/// while `outputHeld` is true, and released (closed, freed) by the decoder thread after that.
final class ItemSession: @unchecked Sendable {
    let id: Int
    let path: String
    let startAt: Double
    let cancellation = CancellationFlag()

    var cancelled = false
    /// The session this one replaced: its device must be closed before this one opens it.
    var previous: ItemSession?
    var output: AlsaOutput?
    var outputHeld = false
    var ring: PCMRing?
    var format: PCMFormat?
    var ready = false
    var decoderFinished = false
    /// The decoder thread is leaving (cancelled or failed): the output thread must let go of the device.
    var decoderExiting = false
    /// Set (lock held, never after cancel) just before the decoder opens the device; the next
    /// item waits for `deviceReleased` only when this is set.
    var deviceClaimed = false
    var deviceReleased = false
    var playRequested = false
    var playRequestedAt: Double?
    var pendingSeek: (seconds: Double, token: Int)?
    /// Bumped by the decoder when a seek empties the ring; the output thread then drops what the device holds.
    var flushGeneration = 0
    /// Track frame of the first frame after the last flush, and frames handed to the device since.
    var basePosition: Int64 = 0
    var framesWritten: Int64 = 0
    /// Frames the device held (not yet heard) at `heldAt`; while `consuming`, it plays them at `rate × speed`.
    var heldFrames = 0
    var heldAt = 0.0
    var consuming = false
    var outputWriting = false
    var endReported = false
    /// Set while the device is gone: why, and when the output thread tries to reopen it next.
    var deviceLostReason: String?
    var nextReopenAt = 0.0
    /// Play once the lost device is back (it was playing, or play was asked meanwhile).
    var resumeOnRestore = false

    init(id: Int, path: String, startAt: Double, previous: ItemSession?) {
        self.id = id
        self.path = path
        self.startAt = startAt
        self.previous = previous
        self.basePosition = 0
    }

    /// Frames the device still holds at `now` (lock held).
    func heldFrames(now: Double, speed: Double) -> Double {
        guard consuming, let format else { return Double(heldFrames) }
        return max(0, Double(heldFrames) - (now - heldAt) * Double(format.sampleRate) * speed)
    }

    /// The position being heard, in seconds (lock held).
    func position(now: Double, speed: Double) -> Double {
        guard let format else { return startAt }
        return max(0, (Double(basePosition + framesWritten) - heldFrames(now: now, speed: speed)) / Double(format.sampleRate))
    }
}
