import Foundation
import TonearmMedia
import TonearmSync

/// A network item on the output thread: waiting for it to fill before its run starts and after
/// it ran dry, and saying so (`buffering`).
extension EngineControl {
    // MARK: Network items

    /// Before a network item's run starts (a load, a seek, rejoining a live stream), and after it
    /// ran dry: sleeps until the pipe holds `input.prebufferSeconds` of it (the decoder wakes this
    /// thread at each chunk meanwhile). Returns true when it slept.
    func awaitFill(_ head: PCMChunk, _ state: inout OutputState) -> Bool {
        assertOn(.output)
        guard !prebuffered(head.itemID) else {
            outputAwaitsFill = false
            if state.refilling && head.runStart == nil {
                // Going on after a refill: the pace counts from now, not from before the gap.
                state.refilling = false
                state.paceAnchor = EngineLock.now()
                state.pacedFrames = 0
                state.paceRoom = 0
            }
            return false
        }
        if head.runStart == .seek(token: Self.internalSeekToken), playRequested, !state.waitingReported {
            // Rejoining a live stream while playing: buffering until it is heard.
            reportBuffering(itemID: head.itemID, &state)
        }
        outputAwaitsFill = true
        resumePauseWaitersIfDone()
        lock.waitOutput()
        return true
    }

    func reportBuffering(itemID: Int, _ state: inout OutputState) {
        assertOn(.output)
        state.waitingReported = true
        setTimeControl(.waitingToPlay)
        post(.bufferingStarted(itemID: itemID, intent: intent))
    }

    /// A network item ran dry while playing: the device plays out what it holds and stops
    /// cleanly (no underrun), and playing goes on once the prebuffer is full again.
    func beginRefill(_ state: inout OutputState) {
        assertOn(.output)
        state.refilling = true
        guard let device = state.device else { return }
        let myEpoch = epoch
        lock.unlock()
        device.drain()
        lock.lock()
        guard epoch == myEpoch else { return }
        clock.heldFrames = 0
        clock.heldAt = EngineLock.now()
        announceTitleIfHeard(&state, now: clock.heldAt)
    }
}
