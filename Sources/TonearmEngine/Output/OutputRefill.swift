import Foundation
import TonearmMedia
import TonearmSync

/// A network item on the output thread: waiting for it to fill before its run starts and after
/// it ran dry, and saying so (`buffering`).
extension OutputWorker {
    // MARK: Network items

    /// Before a network item's run starts (a load, a seek, rejoining a live stream), and after it
    /// ran dry: sleeps until the pipe holds `input.prebufferSeconds` of it (the decoder wakes this
    /// thread at each chunk meanwhile). Returns true when it slept.
    func awaitFill(_ head: PCMChunk, _ state: inout OutputState) -> Bool {
        shared.assertOn(.output)
        guard !shared.prebuffered(head.itemID) else {
            shared.output.awaitsFill = false
            if state.refilling && head.runStart == nil {
                // Going on after a refill: the pace counts from now, not from before the gap.
                state.refilling = false
                state.paceAnchor = EngineLock.now()
                state.pacedFrames = 0
                state.paceRoom = 0
            }
            return false
        }
        if head.runStart == .seek(token: EngineControl.internalSeekToken), shared.play.requested, !state.waitingReported {
            // Rejoining a live stream while playing: buffering until it is heard.
            reportBuffering(itemID: head.itemID, &state)
        }
        shared.output.awaitsFill = true
        shared.resumePauseWaitersIfDone()
        shared.lock.waitOutput()
        return true
    }

    func reportBuffering(itemID: Int, _ state: inout OutputState) {
        shared.assertOn(.output)
        state.waitingReported = true
        shared.setTimeControl(.waitingToPlay)
        shared.post(.bufferingStarted(itemID: itemID, intent: shared.play.intent))
    }

    /// A network item ran dry while playing: the device plays out what it holds and stops
    /// cleanly (no underrun), and playing goes on once the prebuffer is full again.
    func beginRefill(_ state: inout OutputState) {
        shared.assertOn(.output)
        state.refilling = true
        guard let device = state.device else { return }
        let myEpoch = shared.epoch
        shared.lock.unlock()
        device.drain()
        shared.lock.lock()
        guard shared.epoch == myEpoch else { return }
        shared.clock.heldFrames = 0
        shared.clock.heldAt = EngineLock.now()
        announceTitleIfHeard(&state, now: shared.clock.heldAt)
    }
}
