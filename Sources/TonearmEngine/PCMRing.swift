/// A fixed ring of interleaved PCM frames between the decoder thread (writer) and the output
/// thread (reader). Memory is allocated once per item. Indices change only under `EngineLock`;
/// the bytes are copied in and written out without the lock, each side touching only its own
/// region (free space for the writer, filled space for the reader). `reset` (seek) runs with the
/// lock held while the reader is known not to be inside a write.
final class PCMRing {
    let capacityFrames: Int
    let bytesPerFrame: Int
    private let storage: UnsafeMutableRawPointer
    /// Reader-owned; changes under the lock.
    private var readIndex = 0
    /// Writer-owned (decoder thread); changes under the lock, read by the writer without it.
    private var writeIndex = 0
    private(set) var filledFrames = 0

    init(capacityFrames: Int, bytesPerFrame: Int) {
        self.capacityFrames = capacityFrames
        self.bytesPerFrame = bytesPerFrame
        storage = UnsafeMutableRawPointer.allocate(byteCount: capacityFrames * bytesPerFrame, alignment: 16)
    }

    deinit { storage.deallocate() }

    var freeFrames: Int { capacityFrames - filledFrames }

    /// The longest run of filled frames that starts at the read index (up to the ring's end).
    var readable: (pointer: UnsafeRawPointer, frames: Int) {
        (UnsafeRawPointer(storage + readIndex * bytesPerFrame), min(filledFrames, capacityFrames - readIndex))
    }

    /// Copies frames into free space (the caller checked `freeFrames` under the lock).
    func copyIn(_ source: UnsafeRawPointer, frames: Int) {
        let first = min(frames, capacityFrames - writeIndex)
        (storage + writeIndex * bytesPerFrame).copyMemory(from: source, byteCount: first * bytesPerFrame)
        if frames > first {
            storage.copyMemory(from: source + first * bytesPerFrame, byteCount: (frames - first) * bytesPerFrame)
        }
    }

    /// Publishes frames copied in (under the lock).
    func commit(_ frames: Int) {
        writeIndex = (writeIndex + frames) % capacityFrames
        filledFrames += frames
    }

    /// Releases frames the reader has written out (under the lock).
    func consume(_ frames: Int) {
        readIndex = (readIndex + frames) % capacityFrames
        filledFrames -= frames
    }

    func reset() {
        readIndex = 0
        writeIndex = 0
        filledFrames = 0
    }
}
