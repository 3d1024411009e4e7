import TonearmMedia

/// What the output thread drives: an open sound sink, owned by that thread alone (opened on the
/// opener thread and handed over once, see `DeviceOpenAttempt`). ALSA's PCM is one; a Snapcast
/// server's TCP stream source is the other. Not Sendable, like the handles behind it.
protocol OutputDevice: AnyObject {
    /// The format it plays (what was granted, which may differ from what was asked).
    var format: PCMFormat { get }
    /// Frames one write hands over when the device, not the pace, sets the rhythm.
    var periodFrames: Int { get }
    /// Frames one write hands over with pacing, where the clock sets the rhythm and every
    /// write is a wake-up (see the default).
    var pacedWriteFrames: Int { get }
    /// Frames it holds when full: a restored device must take this many before it counts as back.
    var bufferFrames: Int { get }
    /// Blocking write of up to `frames` interleaved frames.
    func write(_ data: UnsafeRawPointer, frames: Int) -> OutputWriteOutcome
    /// Frames written but not yet heard.
    func delayFrames() -> Int
    /// Stops the sound now: true when it paused in place (resume continues the queued frames),
    /// false when it dropped them (the caller keeps the position and refills).
    func pauseNow() -> Bool
    func resume()
    /// Takes back the last `frames` written, if it still holds them all unheard: returns the
    /// frames taken back (all of them, or 0; never some).
    func rewind(frames: Int) -> Int
    /// Whether `rewind` can ever take anything back.
    var canRewind: Bool { get }
    /// Discards what it holds and is ready for new frames.
    func discard()
    /// Plays out what it holds, then is ready for the next stream.
    func drain()
    func close()
}

extension OutputDevice {
    /// A quarter of a second, or a period if that is longer: with pacing every piece is a
    /// wake-up, and fewer, larger pieces cost less (docs/performance.md).
    var pacedWriteFrames: Int { max(periodFrames, format.sampleRate / 4) }
}

enum OutputWriteOutcome {
    case wrote(Int)
    /// An underrun (or resume from suspend) was recovered; nothing was written this time.
    case recovered
    /// The sink is gone (unplugged, powered off, the server went away): it must be reopened.
    case lost(String)
}
