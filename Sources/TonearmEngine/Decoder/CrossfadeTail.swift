import Foundation
import TonearmMedia

/// The last frames of an item, kept back by the decoder to be mixed into the first frames of the
/// item after it (a crossfade). While the item is decoded it is a ring: its newest `capacity`
/// frames wait here and older ones go on to the pipe, so that at the item's end what is here is
/// its tail, whatever its header said of its length.
///
/// Decoder thread only. The memory is kept for the engine's life and grown only when a longer
/// tail or a wider format needs it: a crossfade allocates nothing once one of its size has run.
final class CrossfadeTail {
    private var storage: UnsafeMutableRawPointer?
    private var storageBytes = 0
    /// The item these frames are the tail of (nil: empty and unused).
    private(set) var itemID: Int?
    private(set) var format = PCMFormat(sampleType: .s16, sampleRate: 44100, channels: 2)
    /// Frames it keeps at most.
    private(set) var capacity = 0
    /// The oldest frame's place in the ring, and how many are kept.
    private var start = 0
    private(set) var count = 0
    /// The factor the tail is scaled by in the mix: its item's gain over the gain the output
    /// applies to the item it is mixed into (ReplayGain and loudness differ between items).
    var gain = 1.0
    /// The tail's item's own gain, dB, its ReplayGain tags and the track frame of the tail's
    /// first frame (taken when the tail is complete): what an unmixed hand-on needs.
    var itemGainDB = 0.0
    var replayGain: ReplayGainInfo?
    var startPosition: Int64 = 0
    /// Where the rest of the tail is faded out once the item it is mixed into has ended first.
    private var fadeOutStorage: UnsafeMutableRawPointer?
    static let fadeOutBytes = 64 * 1024

    deinit {
        storage?.deallocate()
        fadeOutStorage?.deallocate()
    }

    var free: Int { capacity - count }

    /// Whether keeping `frames` frames in `format` needs more memory than it has.
    func needsStorage(frames: Int, format: PCMFormat) -> Bool { frames * format.bytesPerFrame > storageBytes }

    /// Grows the memory to hold `frames` frames in `format` (what it held is dropped).
    func reserve(frames: Int, format: PCMFormat) {
        let bytes = frames * format.bytesPerFrame
        guard bytes > storageBytes else { return }
        storage?.deallocate()
        storage = UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: 16)
        storageBytes = bytes
        clear()
    }

    /// Starts keeping up to `frames` frames of `itemID` in `format`.
    func begin(itemID: Int, format: PCMFormat, frames: Int) {
        reserve(frames: frames, format: format)
        self.itemID = itemID
        self.format = format
        capacity = frames
        start = 0
        count = 0
        gain = 1
        itemGainDB = 0
        replayGain = nil
        startPosition = 0
    }

    func clear() {
        itemID = nil
        capacity = 0
        start = 0
        count = 0
    }

    /// Appends `frames` frames (at most `free`).
    func append(from source: UnsafeRawPointer, frames: Int) {
        guard let storage, frames > 0 else { return }
        precondition(frames <= free)
        let bytesPerFrame = format.bytesPerFrame
        var copied = 0
        while copied < frames {
            let end = (start + count) % capacity
            let run = min(frames - copied, capacity - end)
            (storage + end * bytesPerFrame).copyMemory(from: source + copied * bytesPerFrame, byteCount: run * bytesPerFrame)
            copied += run
            count += run
        }
    }

    /// Moves the oldest `frames` frames (at most `count`) to `destination`.
    func takeOldest(into destination: UnsafeMutableRawPointer, frames: Int) {
        guard let storage, frames > 0 else { return }
        precondition(frames <= count)
        let bytesPerFrame = format.bytesPerFrame
        var moved = 0
        while moved < frames {
            let run = min(frames - moved, capacity - start)
            (destination + moved * bytesPerFrame).copyMemory(from: storage + start * bytesPerFrame, byteCount: run * bytesPerFrame)
            moved += run
            start = (start + run) % capacity
            count -= run
        }
    }

    /// The equal-power curve over an overlap of `length` frames, at frame `index` of it: the
    /// factors of the item coming in and of the tail going out (sin² + cos² = 1, so two
    /// uncorrelated items keep their loudness through the overlap).
    static func curve(index: Int, length: Int) -> (incoming: Double, outgoing: Double) {
        let angle = Double.pi / 2 * Double(index) / Double(length)
        return (sin(angle), cos(angle))
    }

    /// Mixes the tail's frames from `index` on into `frames` frames of the next item at
    /// `destination` (in the tail's format): each frame becomes incoming × sin + tail × cos × `gain`
    /// along the curve over the whole tail, rounded and clipped to the sample type. The tail
    /// itself is left as it is (the next item may be replaced and the tail mixed into another).
    func mix(into destination: UnsafeMutableRawPointer, frames: Int, from index: Int) {
        guard let storage, index >= 0, index < count else { return }
        let frames = min(frames, count - index)
        let channels = format.channels
        for frame in 0..<frames {
            let (incoming, outgoing) = Self.curve(index: index + frame, length: count)
            PCMMix.frame(
                into: destination, at: frame * channels, from: storage, at: (start + index + frame) % capacity * channels,
                channels: channels, type: format.sampleType, keep: incoming, add: outgoing * gain)
        }
    }

    /// The next `frames` frames of the tail from `index` on (at most as many as fit in 64 KiB),
    /// faded along the curve into silence, in memory of its own: the item they were mixed into
    /// ended before the tail did. Returns where they are and how many.
    func fadeOut(from index: Int, frames: Int) -> (UnsafeMutableRawPointer, Int) {
        let storage = fadeOutStorage ?? UnsafeMutableRawPointer.allocate(byteCount: Self.fadeOutBytes, alignment: 16)
        fadeOutStorage = storage
        let count = max(0, min(frames, count - index, Self.fadeOutBytes / format.bytesPerFrame))
        storage.initializeMemory(as: UInt8.self, repeating: 0, count: count * format.bytesPerFrame)
        mix(into: storage, frames: count, from: index)
        return (storage, count)
    }
}
