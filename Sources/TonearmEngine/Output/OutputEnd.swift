import Foundation
import TonearmMedia
import TonearmSync

/// The pipe ran dry while playing: the end of the last item (played out, then reported), or
/// the decoder falling behind (buffering reported after a grace period).
extension OutputWorker {
    // MARK: The end, and starvation

    /// Playing with nothing in the pipe: the end of the last item (play out, then report), or the
    /// decoder falling behind (report buffering after a grace period).
    func pipeRanDry(_ state: inout OutputState) {
        shared.assertOn(.output)
        let now = EngineLock.now()
        if let ended = state.lastEnded.flatMap({ $0.epoch == shared.epoch ? $0.itemID : nil }), !moreComing(after: ended) {
            if shared.chainEndedAfter == ended {
                if shared.play.requested {
                    // A play that crossed the end's news (its caller had not heard of it yet):
                    // the end is said again, never waited out in silence as if playing.
                    shared.play.requested = false
                    shared.post(.didPlayToEnd(itemID: ended))
                    shared.setTimeControl(.paused)
                }
                idle(&state)
                return
            }
            if let device = state.device {
                if !state.endHandedOn {
                    // Hands the device's last frames on at once (a `file:` device writes them only
                    // now; a Snapcast server is sent the silence that completes its last chunk
                    // before a pause in the data could make it call the stream idle).
                    state.endHandedOn = true
                    let myEpoch = shared.epoch
                    shared.lock.unlock()
                    device.drain()
                    shared.lock.lock()
                    if shared.epoch != myEpoch || !shared.play.requested || !shared.pipe.isEmpty { return }
                }
                if waitUntilPlayedOut(device, state, now: EngineLock.now()) { return }
            }
            crossBorders(now: .infinity)
            let heard = shared.clock.heard(now: .infinity)
            shared.clock.park(itemID: heard.itemID, frame: heard.frame, sampleRate: heard.sampleRate, now: EngineLock.now())
            shared.clock.consuming = false
            shared.output.chainEnded = (shared.epoch, ended)
            shared.play.requested = false
            confirmRestore(&state, itemID: ended)
            shared.post(.didPlayToEnd(itemID: ended))
            shared.setTimeControl(.paused)
            return
        }
        if state.waitingReported {
            shared.lock.waitOutput()
        } else if !shared.lock.waitOutput(untilMonotonic: now + Self.starvationGrace), shared.pipe.isEmpty, shared.play.requested,
            shared.decoder.epoch == shared.epoch
        {
            reportBuffering(itemID: shared.heardItemID ?? 0, &state)
            if state.writingNetwork { beginRefill(&state) }
        }
    }

    /// With pacing, the device never blocks, so the clock says when what it holds has been
    /// heard: sleeps until then. Returns true when it slept (the caller goes round again).
    func waitUntilPlayedOut(_ device: any OutputDevice, _ state: OutputState, now: Double) -> Bool {
        guard configuration.pace else { return false }
        let drainedAt = state.paceAnchor + Double(state.pacedFrames) / (Double(device.format.sampleRate) * shared.speed)
        guard now < drainedAt else { return false }
        shared.lock.waitOutput(untilMonotonic: drainedAt)
        return true
    }

    /// Whether the decoder will still deliver something after `itemID` in this epoch.
    func moreComing(after itemID: Int) -> Bool {
        if shared.decoder.epoch != shared.epoch { return true }
        if let working = shared.decoder.itemID, working != itemID, !shared.items.abandoned.contains(working) { return true }
        if let next = shared.next, next.after == itemID, next.item.id != shared.decoder.failedNextID { return true }
        return false
    }
}
