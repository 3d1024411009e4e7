import Foundation
import TonearmCore
import TonearmSync

/// The sleep timer: `sleep(after:fade:)` fades what plays out over its last seconds and pauses;
/// `sleep(atEndOf:)` pauses where the current item, or the queue, ends. Its moments are kept by
/// the player's `WallClockTimer` (one wait armed, none when nothing is due).
extension Player {
    /// What the player's timer thread waits for.
    enum TimerKey: Hashable, Sendable {
        case sleepFade, sleepPause, alarm, announce, manualFade
    }

    /// Pauses `seconds` from now, the last `fade` seconds fading out (at most all of them).
    /// Replaces any sleep timer set before.
    @discardableResult
    package func sleep(after seconds: Double, fade: Double) throws(PlayerError) -> SleepPlan {
        guard seconds.isFinite, seconds > 0, seconds <= 7 * 86_400 else {
            throw .invalid("after_s must be a number of seconds above 0, at most a week (604800)")
        }
        guard fade.isFinite, fade >= 0, fade <= 600 else { throw .invalid("fade_s must be a number of seconds from 0 to 600") }
        let plan = SleepPlan.at(Date(timeIntervalSinceNow: seconds), fade: min(fade, seconds))
        model.withLock { m in
            endSleep(&m)
            m.sleep = plan
            guard case .at(let at, let fade) = plan else { return }
            timer.schedule(.sleepFade, at: at.addingTimeInterval(-fade)) { [weak self] in self?.sleepFadeBegins(plan) }
        }
        logger.info("sleep timer set", metadata: ["at": "\(plan)"])
        return plan
    }

    /// Pauses at the start of what follows the current item (`item`) or the queue's last item
    /// (`queue`): the queue moves on to it, paused.
    @discardableResult
    package func sleep(atEndOf end: SleepEnd) -> SleepPlan {
        let plan = SleepPlan.endOf(end)
        model.withLock { m in
            endSleep(&m)
            m.sleep = plan
            // What was named to follow gaplessly may be what the timer now stops before.
            refreshNext(&m)
        }
        logger.info("sleep timer set", metadata: ["at": "\(plan)"])
        return plan
    }

    /// Cancels the sleep timer; a fade under way comes back up in 300 ms. Returns whether one was set.
    @discardableResult
    package func cancelSleep() -> Bool {
        model.withLock { m in
            let had = m.sleep != nil
            endSleep(&m)
            refreshNext(&m)
            return had
        }
    }

    package var sleepPlan: SleepPlan? { model.withLock { $0.sleep } }

    /// Clears the plan and its moments; undoes a fade under way (lock held).
    func endSleep(_ m: inout Model) {
        timer.cancel(.sleepFade)
        timer.cancel(.sleepPause)
        if m.sleepFading {
            m.sleepFading = false
            engine.fade(to: 1, over: 0.3)
        }
        m.sleep = nil
    }

    /// Whether the sleep timer pauses playback after `queueID` ends (lock held).
    func sleepsAfter(_ queueID: Int, _ m: Model) -> Bool {
        guard case .endOf(let end) = m.sleep else { return false }
        switch end {
        case .item: return true
        case .queue: return m.queue.playOrder.last == queueID
        }
    }

    /// The fade's first moment: what plays fades to silence by the plan's moment, and the pause
    /// comes once that silence is heard (the output writes ahead of what is heard).
    private func sleepFadeBegins(_ plan: SleepPlan) {
        guard case .at(let at, let fade) = plan else { return }
        model.withLock { m in
            guard m.sleep == plan else { return }
            if machine.currentState.wantsSound, fade > 0 {
                m.sleepFading = true
                engine.fade(to: 0, over: fade)
            }
            timer.schedule(.sleepPause, at: at.addingTimeInterval(engine.outputLead)) { [weak self] in self?.sleepEnds(plan) }
        }
    }

    private func sleepEnds(_ plan: SleepPlan) {
        model.withLock { m in
            guard m.sleep == plan else { return }
            m.sleep = nil
            if machine.currentState.wantsSound {
                _ = try? perform(.pause, &m, evenUnchanged: true) { _, m in m.context.intent = engine.pause() }
                logger.info("sleep timer: paused")
            } else if machine.currentState.isLoading, let current = m.context.currentItem,
                m.inPlay[current]?.playsOnReady == true
            {
                // Due while an item loads to play: it comes ready, and stays paused.
                m.inPlay[current]?.playsOnReady = false
                m.context.intent = engine.pause()
                logger.info("sleep timer: paused")
            }
            if m.sleepFading {
                // Paused in silence: the next play is at full level from the sample heard last.
                m.sleepFading = false
                engine.fade(to: 1, over: 0)
                engine.refillWhilePaused()
            }
        }
    }
}

extension PlaybackState {
    /// Playing, or about to be once a buffering or a seek is over.
    var wantsSound: Bool {
        switch self {
        case .playing, .buffering(previousState: .playing), .seeking(_, previousState: .playing): true
        default: false
        }
    }
}
