import Foundation
import TonearmCore
import TonearmEngine
import TonearmMedia

/// What the daemon keeps across a restart, crash or power loss (the state file): the queue with
/// its ids, current item and options, where playback stood, and the volume and ReplayGain.
package struct SavedPlayerState: Codable, Sendable, Equatable {
    /// How playback stood: what `state.resume = "playing"` brings back.
    package enum Playback: String, Codable, Sendable {
        case playing, paused, stopped
    }

    /// The file's format; a file of another format is set aside, not misread.
    package var format = 1
    package var queue: PlayQueue
    package var playback: Playback
    /// Seconds into the current item.
    package var position: Double
    /// Longer than any item (three years): a position past it is not a time but damage, and
    /// would overflow the engine's frame counts.
    package static let maximumPosition = 1e8
    package var volume: Int
    /// The number of the last journaled change this snapshot holds (see `StateJournal`): the
    /// journal's later changes are replayed onto it. nil in files from before the journal.
    package var journalSequence: Int?
    package var replayGainMode: String
    package var replayGainPreampDB: Double
    /// The queue items' durations as their tags gave them, by item id: shown again after a
    /// restart until the files are read anew. nil when none was known (and in older files).
    package var durations: [Int: Double]?

    package init(queue: PlayQueue, playback: Playback, position: Double, volume: Int, replayGain: ReplayGainSettings) {
        self.queue = queue
        self.playback = playback
        self.position = position
        self.volume = volume
        replayGainMode = replayGain.mode.rawValue
        replayGainPreampDB = replayGain.preampDB
    }

    package var replayGain: ReplayGainSettings? {
        guard let mode = ReplayGainMode(rawValue: replayGainMode), replayGainPreampDB.isFinite,
            Bounds.preampDB.contains(replayGainPreampDB)
        else { return nil }
        return ReplayGainSettings(mode: mode, preampDB: replayGainPreampDB)
    }

    /// Why this state cannot be restored as it is, if it cannot (a file that decodes but holds
    /// nonsense is as corrupt as one that does not decode; the queue checks itself as it decodes).
    package var problem: String? {
        if format != 1 { return "format \(format) is not 1" }
        if !position.isFinite || position < 0 || position > Self.maximumPosition {
            return "position \(position) is not a time within an item"
        }
        if !Bounds.volume.contains(volume) { return "volume \(volume) is out of 0…100" }
        if let journalSequence, !(0...(1 << 53)).contains(journalSequence) {
            return "journal sequence \(journalSequence) is out of range"
        }
        if replayGain == nil { return "replay gain '\(replayGainMode)' \(replayGainPreampDB) dB is not valid" }
        return nil
    }
}

/// How a restored daemon resumes (`state.resume`).
package enum ResumeMode: String, Sendable, CaseIterable {
    /// The current item is loaded at the saved position, paused.
    case paused
    /// As it was: playing if it was playing, else paused.
    case playing
    /// The queue, volume and options come back; nothing is loaded.
    case off
}
