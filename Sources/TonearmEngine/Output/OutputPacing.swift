import Foundation
import TonearmMedia
import TonearmSync

/// Pacing (`output.pace`): for a device that never blocks, the output thread keeps ahead of a
/// monotonic clock running at `speed`, one piece per wake-up.
extension OutputWorker {
    // MARK: Pacing

    /// With pacing, sleeps while more than `paceLeadFrames` are ahead of the clock. Returns true when it slept.
    /// Once awake it writes until `pacedWriteFrames` more are ahead (`paceRoom`), across the end
    /// of a chunk: one wake-up per piece, where a piece cut at each chunk's end cost two.
    /// A border heard meanwhile wakes it: a piece holds 250 ms, and `started` is due at the
    /// border's sample, not at the next write.
    func waitForPace(_ state: inout OutputState) -> Bool {
        shared.assertOn(.output)
        guard configuration.pace, let device = state.device else { return false }
        guard state.paceRoom <= 0 else { return false }
        let now = EngineLock.now()
        let rate = Double(device.format.sampleRate) * shared.speed
        let ahead = pacedAhead(state, rate: rate, now: now)
        let lead = Double(paceLeadFrames(device))
        guard ahead > lead else {
            state.paceRoom = Int((lead - ahead).rounded(.up)) + pacePieceFrames(device)
            return false
        }
        crossBorders(now: now)
        let paceAt = state.paceAnchor + (Double(state.pacedFrames) - lead) / rate
        // A border not after `now` is one `crossBorders` just missed by a rounding: the pace wakes it.
        let borderAt = shared.clock.nextSegmentHeardAt.flatMap { $0 > now ? $0 : nil } ?? paceAt
        shared.lock.waitOutput(untilMonotonic: min(paceAt, borderAt))
        return true
    }

    /// With pacing, the frames handed to the device that the pace's clock has not consumed by `now`.
    func pacedAhead(_ state: OutputState, rate: Double, now: Double) -> Double {
        Double(state.pacedFrames) - (now - state.paceAnchor) * rate
    }

    /// What one write hands the device: a period; with pacing what is left of this wake-up's
    /// piece (`paceRoom`, up to the device's `pacedWriteFrames`), since the clock (not the
    /// device) decides when to write and each wake-up costs. A device without a clock
    /// (`OutputReport.takesBatches`) takes a whole chunk at once: nothing is heard from it, so the
    /// clock's steps may be coarse.
    func chunkFrames(_ device: any OutputDevice, _ state: OutputState) -> Int {
        if configuration.pace { return max(1, state.paceRoom) }
        return shared.output.takesBatches ? .max : device.periodFrames
    }

    /// With pacing, how far ahead of the clock the output stays at least (a period, at least
    /// 100 ms): a wake-up a little late still finds the device holding audio.
    func paceLeadFrames(_ device: any OutputDevice) -> Int {
        max(device.periodFrames, device.format.sampleRate / 10)
    }

    /// With pacing, what one wake-up writes: the device's `pacedWriteFrames`. On a device that
    /// can take frames back, `write` holds what follows an unheard border within the buffer.
    func pacePieceFrames(_ device: any OutputDevice) -> Int { device.pacedWriteFrames }
}
