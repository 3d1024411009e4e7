/// When a fade is heard (`PlayerEngine.fadeHeard`): the output notes, at the write that puts the
/// fade's last frame on the device, when that frame will be heard, and resumes the callers
/// waiting for it once that moment has come (checked each time round its loop, so within a
/// write's worth of audio). A fade that cannot be heard (nothing plays, the device is away, a
/// newer fade replaced it) resumes them at once: nobody waits for what will not come.
extension OutputWorker {
    /// Output thread, lock held, after `head`'s write: the fade in force is whole on the device.
    func noteFadeWritten(_ head: PCMChunk, _ state: OutputState, now: Double) {
        shared.assertOn(.output)
        guard shared.output.fadeHeardAt?.serial != state.fadeSerial, state.gain.fadeIsSettled, head.gained <= head.written else { return }
        shared.output.fadeHeardAt = (state.fadeSerial, shared.clock.writtenHeardAt ?? now)
    }
}

extension EngineControl {
    /// Whether the output is writing what plays, so that a fade asked now will be heard. Lock held.
    var fadeCanBeHeard: Bool {
        play.requested && clock.consuming && target != nil && !play.shuttingDown && !output.awaitsFill && output.deviceLostReason == nil
    }

    /// Whether a caller waiting for fade `serial` may go: it is heard, replaced, or cannot be
    /// heard. Lock held.
    func fadeWaitIsOver(_ serial: Int, now: Double) -> Bool {
        let heard = output.fadeHeardAt.map { $0.serial == serial && $0.at <= now } ?? false
        return heard || !fadeCanBeHeard || serial != waits.latestFade
    }

    /// Resumes the callers whose wait is over. Lock held.
    func resumeFadeWaitersIfHeard(now: Double) {
        guard !waits.fades.isEmpty else { return }
        var waiting = 0
        for waiter in waits.fades {
            if fadeWaitIsOver(waiter.serial, now: now) {
                waiter.continuation.resume()
            } else {
                waits.fades[waiting] = waiter
                waiting += 1
            }
        }
        waits.fades.removeLast(waits.fades.count - waiting)
    }
}
