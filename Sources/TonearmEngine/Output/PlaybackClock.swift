/// Which item, and which of its frames, is being heard right now. Owned by the output thread,
/// which alone changes it, always with the engine lock held; callers read it under the same lock
/// (position, status). No allocation after init: segments live in a small fixed ring.
///
/// Frames are counted on the device's side: `deviceWritten` frames have been handed to the
/// device, of which it still holds `held(now)`; the difference is what has been heard. Each
/// segment maps a run of device frames onto one item's track frames: a new one starts at every
/// item border (gapless advance) and after every discontinuity (seek, load).
struct PlaybackClock {
    struct Segment {
        var itemID: Int
        var deviceStart: Int64
        var trackStart: Int64
        var sampleRate: Int
    }

    /// Track time advances this many seconds per wall-clock second while consuming (pacing speed).
    let speed: Double

    private var ring: [Segment]
    private var first = 0
    private var count = 0
    private(set) var deviceWritten: Int64 = 0
    /// Frames the device held (not yet heard) at `heldAt`; while `consuming` it plays them at rate × speed.
    /// Fractional, as a paced device's holding is (`holdPaced`).
    var heldFrames = 0.0
    var heldAt = 0.0
    var consuming = false
    /// Where playback stands when no written frame is pending: after a load, seek, stop or the end.
    private(set) var rest = Segment(itemID: 0, deviceStart: 0, trackStart: 0, sampleRate: 44100)

    init(speed: Double) {
        self.speed = speed
        ring = Array(repeating: rest, count: 16)
    }

    private var last: Segment? { count > 0 ? ring[(first + count - 1) % ring.count] : nil }

    /// Frames the device still holds at `now`.
    func held(now: Double) -> Double {
        guard consuming else { return heldFrames }
        let held = heldFrames - (now - heldAt) * Double(rest.sampleRate) * speed
        // At `writtenHeardAt` the arithmetic may leave a trace of a frame: that is none held.
        return held < 1e-6 ? 0 : held
    }

    /// The item and track frame being heard at `now`.
    func heard(now: Double) -> (itemID: Int, frame: Int64, sampleRate: Int) {
        let device = Double(deviceWritten) - held(now: now)
        var found = rest
        var foundDevice = Double(rest.deviceStart)
        for offset in 0..<count {
            let segment = ring[(first + offset) % ring.count]
            if Double(segment.deviceStart) <= device {
                found = segment
                foundDevice = Double(segment.deviceStart)
            }
        }
        let frame = found.trackStart + Int64((device - foundDevice).rounded(.down))
        return (found.itemID, max(found.trackStart, frame), found.sampleRate)
    }

    func position(now: Double) -> (itemID: Int, seconds: Double) {
        let heard = heard(now: now)
        return (heard.itemID, Double(heard.frame) / Double(heard.sampleRate))
    }

    /// Nothing written is pending any more (the device dropped or played out what it held):
    /// playback stands at `frame` of `itemID`.
    mutating func park(itemID: Int, frame: Int64, sampleRate: Int, now: Double) {
        count = 0
        first = 0
        heldFrames = 0
        heldAt = now
        rest = Segment(itemID: itemID, deviceStart: deviceWritten, trackStart: frame, sampleRate: sampleRate)
    }

    /// Records `frames` frames of `itemID`, starting at its track frame `trackFrame`, as handed to the device.
    mutating func wrote(itemID: Int, trackFrame: Int64, frames: Int, sampleRate: Int) {
        let base = last ?? rest
        if base.itemID != itemID || base.trackStart + (deviceWritten - base.deviceStart) != trackFrame {
            if count == ring.count {
                // Full (a storm of tiny segments): the oldest is surely heard by now.
                rest = ring[first]
                first = (first + 1) % ring.count
                count -= 1
            }
            ring[(first + count) % ring.count] = Segment(
                itemID: itemID, deviceStart: deviceWritten,
                trackStart: trackFrame, sampleRate: sampleRate)
            count += 1
        }
        deviceWritten += Int64(frames)
    }

    /// The frames written after the last of `itemID`'s that the device still holds unheard:
    /// what must be taken back so that nothing follows `itemID` but what is written next. nil
    /// when `itemID` is not what is heard at `now`, or nothing was written after it.
    func framesWritten(after itemID: Int, now: Double) -> Int64? {
        let heard = heard(now: now)
        guard heard.itemID == itemID else { return nil }
        let device = Double(deviceWritten) - held(now: now)
        for offset in 0..<count {
            let segment = ring[(first + offset) % ring.count]
            if segment.itemID != itemID, Double(segment.deviceStart) > device {
                return deviceWritten - segment.deviceStart
            }
        }
        return nil
    }

    /// What was written at device frame `device` (counted as `deviceWritten` counts): the item,
    /// its frame, and how many frames of that item's run follow from there in what was written.
    /// nil when that frame was not written, or is before what is being heard.
    func written(at device: Int64) -> (itemID: Int, frame: Int64, sampleRate: Int, runLeft: Int64)? {
        guard device < deviceWritten, device >= rest.deviceStart else { return nil }
        var found = rest
        var runEnd = deviceWritten
        for offset in 0..<count {
            let segment = ring[(first + offset) % ring.count]
            if segment.deviceStart > device {
                runEnd = segment.deviceStart
                break
            }
            found = segment
        }
        return (found.itemID, found.trackStart + device - found.deviceStart, found.sampleRate, runEnd - device)
    }

    /// A paced device (no real one to ask) has played `(now − anchor) × rate × speed` of the
    /// `pacedFrames` handed to it since `anchor`, and holds the rest. Not rounded: a moment's
    /// heard frame must not move when a write lands after it (a pause read before and after).
    mutating func holdPaced(_ pacedFrames: Int, since anchor: Double, sampleRate: Int, now: Double) {
        heldFrames = max(0, Double(pacedFrames) - (now - anchor) * Double(sampleRate) * speed)
        heldAt = now
    }

    /// The device took back the last `frames` it was handed, unheard: they were never written.
    mutating func unwrite(_ frames: Int64, now: Double) {
        let held = held(now: now)
        deviceWritten -= frames
        while let last, last.deviceStart >= deviceWritten { count -= 1 }
        heldFrames = max(0, held - Double(frames))
        heldAt = now
    }

    /// When everything written so far has been heard (while consuming); nil when not consuming.
    var writtenHeardAt: Double? {
        guard consuming else { return nil }
        return heldAt + heldFrames / (Double(rest.sampleRate) * speed)
    }

    /// When the first segment not yet heard starts being heard (while consuming): a border, or
    /// the start of a discontinuity. nil when none is pending or the device is not consuming.
    var nextSegmentHeardAt: Double? {
        guard consuming, count > 0 else { return nil }
        let heldFromSegment = Double(deviceWritten - ring[first].deviceStart)
        return heldAt + (heldFrames - heldFromSegment) / (Double(rest.sampleRate) * speed)
    }

    /// Drops segments wholly heard by `now` (keeping the one being heard as `rest`), and returns
    /// the item being heard when that differs from the one before: the border was crossed.
    mutating func advance(now: Double) -> Int? {
        let before = rest.itemID
        let device = Double(deviceWritten) - held(now: now)
        while count > 0, Double(ring[first].deviceStart) <= device {
            rest = ring[first]
            first = (first + 1) % ring.count
            count -= 1
        }
        return rest.itemID != before ? rest.itemID : nil
    }
}
