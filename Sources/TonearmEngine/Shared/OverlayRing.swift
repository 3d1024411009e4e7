import TonearmMedia

/// A clip played over the music (a ducked announcement): the decoder thread decodes it, in the
/// format the device is open in, into this ring; the output thread mixes it into the music it
/// writes, after the music's gain, at the clip's own gain. The memory is allocated once, when
/// the clip opens (decoder thread, off the lock). `written`, `mixed` and `ended` change only
/// under the engine lock: `written` and `ended` by the decoder thread, `mixed` by the output
/// thread, `fadeOutLeft` by callers and the output thread. The frames between `mixed` and
/// `written` are the output thread's to read, the rest of the ring the decoder thread's to fill.
final class OverlayRing {
    /// A second: more than the output writes at once (a paced piece, an ALSA period); the
    /// decoder tops it up when half of it was mixed.
    static let seconds = 1.0

    let itemID: Int
    let format: PCMFormat
    let gain: Double
    let capacity: Int
    private let storage: UnsafeMutableRawPointer
    /// Frames put in and mixed out since the start (engine lock).
    var written = 0
    var mixed = 0
    /// The clip was decoded to its end (engine lock).
    var ended = false
    /// Withdrawn (`stopOverlay`): the frames of its 5 ms fade-out still to mix; nil while it plays.
    var fadeOutLeft: Int?

    init(itemID: Int, format: PCMFormat, gain: Double) {
        self.itemID = itemID
        self.format = format
        self.gain = gain
        capacity = max(1024, Int(Double(format.sampleRate) * Self.seconds))
        storage = UnsafeMutableRawPointer.allocate(byteCount: capacity * format.bytesPerFrame, alignment: 16)
    }

    deinit { storage.deallocate() }

    /// Frames ready to mix, and room to fill (engine lock).
    var available: Int { written - mixed }
    var room: Int { capacity - available }
    /// Everything decoded was mixed: the clip is over (engine lock).
    var isDone: Bool { ended && available == 0 }

    /// Copies `frames` frames (at most `room`) in after what was written; `written` is then
    /// moved by the caller, under the lock. Decoder thread, off the lock.
    func fill(from source: UnsafeRawPointer, frames: Int, at start: Int) {
        var done = 0
        while done < frames {
            let index = (start + done) % capacity
            let run = min(frames - done, capacity - index)
            (storage + index * format.bytesPerFrame).copyMemory(
                from: source + done * format.bytesPerFrame,
                byteCount: run * format.bytesPerFrame)
            done += run
        }
    }

    /// Adds `frames` frames of the clip from `start` on, × `gain`, into `destination` (in the
    /// same format), rounded and clipped; fading out along the last `fadeOut.left` frames of a
    /// fade of `fadeOut.length` (the last one silent). Output thread, off the lock.
    func mix(
        into destination: UnsafeMutableRawPointer, frames: Int, from start: Int,
        fadeOut: (left: Int, length: Int)? = nil
    ) {
        let channels = format.channels
        for frame in 0..<frames {
            let level = fadeOut.map { Double(max(0, $0.left - frame - 1)) / Double($0.length) } ?? 1
            PCMMix.frame(
                into: destination, at: frame * channels, from: storage, at: (start + frame) % capacity * channels,
                channels: channels, type: format.sampleType, keep: 1, add: gain * level)
        }
    }
}
