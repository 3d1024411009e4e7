import Foundation
import TonearmCore
import TonearmEngine

/// With a crossfade set, `next`, `previous` and a jump while playing fade what plays out over
/// `crossfade.manual_ms` before the new item starts, instead of cutting it. The jump waits until
/// the output says the fade's last frame is heard (`PlayerEngine.fadeHeard`; a timer a second
/// after it was due stands in for an output that stalls); another jump meanwhile takes its place
/// (and counts from its target: `next` three times skips three items, after one fade); any other
/// command ends the fade at once and is carried out as it comes.
extension Player {
    /// A jump waiting for the fade of what plays: where it goes, and its caller.
    struct ManualFade {
        var queueID: Int
        var continuation: CheckedContinuation<Bool, Never>
        /// The engine's fade.
        var serial: Int
    }

    /// Where the next jump counts from: a jump waiting for its fade, else the current item (lock held).
    func jumpOrigin(_ m: Model) -> Int? { m.manualFade?.queueID ?? m.queue.currentID }

    /// Before a jump to `queueID`: fades out what plays and waits for it to be heard, when that
    /// applies. Returns false when another command took over meanwhile (the jump is superseded).
    func fadeOutBeforeJump(to queueID: Int) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            model.withLock { m in
                if let waiting = m.manualFade {
                    // Another jump during the fade: this one takes its place, the fade goes on.
                    waiting.continuation.resume(returning: false)
                    m.manualFade = ManualFade(queueID: queueID, continuation: continuation, serial: waiting.serial)
                    return
                }
                let seconds = crossfadeSettings.manualSeconds
                guard m.queue.options.crossfade > 0, seconds > 0, machine.currentState == .playing,
                    m.announcements.playing == nil, m.announcementEngineID == nil
                else {
                    continuation.resume(returning: true)
                    return
                }
                let serial = engine.fade(to: 0, over: seconds)
                m.manualFade = ManualFade(queueID: queueID, continuation: continuation, serial: serial)
                Task { [weak self, engine] in
                    await engine.fadeHeard(serial)
                    self?.manualFadeHeard(serial)
                }
                timer.schedule(.manualFade, at: Date().addingTimeInterval(seconds + engine.outputLead + 1)) { [weak self] in
                    self?.manualFadeHeard(serial)
                }
            }
        }
    }

    /// Fade `serial` is heard: the waiting jump goes on, at full level.
    private func manualFadeHeard(_ serial: Int) {
        model.withLock { m in
            guard let waiting = m.manualFade, waiting.serial == serial else { return }
            m.manualFade = nil
            timer.cancel(.manualFade)
            engine.fade(to: 1, over: 0)
            waiting.continuation.resume(returning: true)
        }
    }

    /// Another command came during a fade before a jump: the jump is superseded and the level
    /// is whole again at once (lock held).
    func endManualFade(_ m: inout Model) {
        guard let waiting = m.manualFade else { return }
        m.manualFade = nil
        timer.cancel(.manualFade)
        engine.fade(to: 1, over: 0)
        waiting.continuation.resume(returning: false)
    }
}
