import Foundation
import Logging
import TonearmCore
import TonearmEngine
import TonearmMedia
import TonearmSync

/// Volume and ReplayGain: kept in the model, in force in the engine from its next sample.
extension Player {
    // MARK: Volume and ReplayGain

    /// Sets the software volume, 0…100 (or changes it by `delta`); returns the new level.
    package func setVolume(level: Int? = nil, delta: Int? = nil) -> Int {
        model.withLock { m in
            var newLevel = m.volume
            if let level { newLevel = level }
            if let delta { newLevel += delta }
            let before = m.volume
            m.volume = min(max(newLevel, 0), 100)
            engine.setVolume(Self.factor(m.volume))
            if m.volume != before { changes.record(.volume(level: m.volume)) }
            // News even when the level did not change, as MPD's mixer gives it.
            settingsEvents.yield(.volume(m.volume))
            return m.volume
        }
    }

    /// Volume level → gain factor: a cubic curve, so that equal steps sound like equal steps
    /// (as PulseAudio's software volume); 100 is exactly 1, which leaves samples untouched.
    static func factor(_ level: Int) -> Double {
        let fraction = Double(min(max(level, 0), 100)) / 100
        return fraction * fraction * fraction
    }

    package func setReplayGain(mode: ReplayGainMode? = nil, preampDB: Double? = nil) -> ReplayGainSettings {
        model.withLock { m in
            let before = m.replayGain
            if let mode { m.replayGain.mode = mode }
            if let preampDB { m.replayGain.preampDB = preampDB }
            engine.setReplayGain(m.replayGain)
            // A mode that levels by loudness now: what plays now and next is measured ahead.
            if m.replayGain.mode != before.mode { measureAhead(m) }
            if m.replayGain != before {
                changes.record(.replayGain(mode: m.replayGain.mode.rawValue, preampDB: m.replayGain.preampDB))
            }
            settingsEvents.yield(.replayGain)
            return m.replayGain
        }
    }
}
