import Foundation
import TonearmCore
import TonearmEngine
import TonearmMedia

/// One acknowledged change to what the state file keeps, as the state journal records it:
/// a queue edit (options and the current item included), the volume, or ReplayGain. Where
/// playback stands (play/pause, the position) is not journaled: the keeper saves it in the
/// snapshot, on every transition and every `state.save_interval` while playing.
package enum StateChange: Sendable, Equatable, Codable {
    case queue(edit: QueueEdit)
    case volume(level: Int)
    case replayGain(mode: String, preampDB: Double)
}

extension SavedPlayerState {
    /// Makes `change` on this state (replaying the journal at start).
    package mutating func apply(_ change: StateChange) throws(StateChangeError) {
        switch change {
        case .queue(let edit):
            let current = queue.currentID
            do throws(QueueError) { try queue.apply(edit) } catch { throw StateChangeError(description: "\(error)") }
            // `position` is seconds into the current item. An edit that changed the current item
            // (a gapless join, a jump, its removal) leaves the new one at its start: the
            // snapshot's position is the old item's, never to be resumed in another.
            if queue.currentID != current { position = 0 }
        case .volume(let level):
            guard Bounds.volume.contains(level) else { throw StateChangeError(description: "volume \(level) is out of 0…100") }
            volume = level
        case .replayGain(let mode, let preampDB):
            guard ReplayGainMode(rawValue: mode) != nil, preampDB.isFinite, Bounds.preampDB.contains(preampDB) else {
                throw StateChangeError(description: "replay gain '\(mode)' \(preampDB) dB is not valid")
            }
            replayGainMode = mode
            replayGainPreampDB = preampDB
        }
    }
}

package struct StateChangeError: Error, CustomStringConvertible, Sendable {
    package let description: String
}
