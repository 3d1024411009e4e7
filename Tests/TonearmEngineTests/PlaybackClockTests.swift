import Testing

@testable import TonearmEngine

/// The clock that says which frame is heard, fed as a paced output feeds it.
@Suite("Playback clock")
struct PlaybackClockTests {
    /// A pause is read at the moment it was asked, before and after the output carried it out:
    /// a write that landed between the two reads must not move the heard frame. The moments are
    /// chosen so that the holding is fractional at each write (44.1 kHz: 441 frames per 10 ms
    /// plus a third of a frame).
    @Test(arguments: [0.01 + 1 / 132_300, 0.023_456_7, 0.5 / 44_100])
    func aMomentsHeardFrameDoesNotMoveWithALaterWrite(_ offset: Double) {
        var clock = PlaybackClock(speed: 1)
        clock.park(itemID: 7, frame: 1000, sampleRate: 44_100, now: 0)
        clock.consuming = true
        let anchor = 1.0
        var paced = 0
        func write(_ frames: Int, at now: Double) {
            clock.wrote(itemID: 7, trackFrame: 1000 + Int64(paced), frames: frames, sampleRate: 44_100)
            paced += frames
            clock.holdPaced(paced, since: anchor, sampleRate: 44_100, now: now)
        }
        write(4410, at: anchor + offset)
        let pausedAt = anchor + 0.05 + offset
        let before = clock.heard(now: pausedAt)
        write(4410, at: pausedAt + 0.003 + offset)
        let after = clock.heard(now: pausedAt)
        #expect(before.frame == after.frame && before.itemID == after.itemID, "\(before) then \(after)")
        let expected = 1000 + Int64((0.05 + offset) * 44_100)
        #expect(before.frame == expected)
    }

    /// A pause parks the holding rounded up, so the heard frame stays the one read just before.
    @Test func aPauseKeepsTheFrameReadJustBefore() {
        var clock = PlaybackClock(speed: 2)
        clock.park(itemID: 3, frame: 0, sampleRate: 48_000, now: 0)
        clock.consuming = true
        clock.wrote(itemID: 3, trackFrame: 0, frames: 9600, sampleRate: 48_000)
        clock.holdPaced(9600, since: 0, sampleRate: 48_000, now: 0.000_01)
        let pausedAt = 0.031_234_5
        let read = clock.heard(now: pausedAt)
        clock.heldFrames = clock.held(now: pausedAt).rounded(.up)
        clock.heldAt = pausedAt
        clock.consuming = false
        #expect(clock.heard(now: pausedAt + 10).frame == read.frame)
        #expect(read.frame == Int64(pausedAt * 48_000 * 2))
    }
}
