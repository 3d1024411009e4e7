import Foundation

/// A copy of the last frames handed to a device that can take frames back, as they were
/// written (gain and overlay applied). A pause takes back what the device holds and fades out
/// from just after what is being heard (`fadeOutFromPlayingPoint`), with frames the pipe no
/// longer holds. Made when the device opens and owned by the output thread; nothing is
/// allocated after that, so writes on the audio path only copy.
final class WrittenFrames {
    let bytesPerFrame: Int
    /// Frames kept at most: all a device may hold unheard, paced or not.
    let capacity: Int
    /// Frames held (at most `capacity`).
    private(set) var count = 0
    private var end = 0
    private let bytes: UnsafeMutableRawPointer
    /// Room for one fade, made from the copy (`copy(back:frames:)`).
    private let scratch: UnsafeMutableRawPointer
    let scratchFrames: Int

    init(bytesPerFrame: Int, capacity: Int, scratchFrames: Int) {
        self.bytesPerFrame = bytesPerFrame
        self.capacity = max(1, capacity)
        self.scratchFrames = scratchFrames
        bytes = .allocate(byteCount: self.capacity * bytesPerFrame, alignment: 16)
        scratch = .allocate(byteCount: max(1, scratchFrames) * bytesPerFrame, alignment: 16)
    }

    deinit {
        bytes.deallocate()
        scratch.deallocate()
    }

    /// Keeps `frames` more, the oldest going once `capacity` is reached.
    func append(_ source: UnsafeRawPointer, frames: Int) {
        guard frames > 0 else { return }
        let kept = min(frames, capacity)
        var from = source + (frames - kept) * bytesPerFrame
        var left = kept
        while left > 0 {
            let run = min(left, capacity - end)
            (bytes + end * bytesPerFrame).copyMemory(from: from, byteCount: run * bytesPerFrame)
            from += run * bytesPerFrame
            end = (end + run) % capacity
            left -= run
        }
        count = min(capacity, count + kept)
    }

    /// The device took back its last `frames`.
    func dropLast(_ frames: Int) {
        let dropped = min(frames, count)
        count -= dropped
        end = (end - dropped + capacity) % capacity
    }

    /// Copies `frames` frames (at most `scratchFrames`) that start `back` frames before the
    /// end into the scratch room, and returns it.
    func copy(back: Int, frames: Int) -> UnsafeMutableRawPointer {
        precondition(back <= count && frames <= min(back, scratchFrames))
        var index = (end - back + capacity) % capacity
        var done = 0
        while done < frames {
            let run = min(frames - done, capacity - index)
            (scratch + done * bytesPerFrame).copyMemory(from: bytes + index * bytesPerFrame, byteCount: run * bytesPerFrame)
            done += run
            index = (index + run) % capacity
        }
        return scratch
    }
}
