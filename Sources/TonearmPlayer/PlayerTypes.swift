import Foundation
import Logging
import TonearmCore
import TonearmEngine
import TonearmMedia
import TonearmSync

/// Everything `status` reports.
package struct PlayerStatus: Sendable, Equatable {
    package var state: PlaybackState
    package var position: Double
    /// Seconds of decoded audio ahead of what is heard (a network source's buffer fill).
    package var buffered: Double
    package var duration: Double?
    package var media: MediaInfo?
    package var output: OutputConfiguration
    package var interruption: String?
    /// Queue item ids: the one being heard (or loaded), and the one that follows it.
    package var current: Int?
    package var next: Int?
    package var queueVersion: Int
    package var volume: Int
    package var replayGain: ReplayGainSettings
    /// The current item's loudness and the gain it plays with; nil when nothing is current.
    package var loudness: ItemLoudness? = nil
    /// The sleep timer, if one is set.
    package var sleep: SleepPlan? = nil
    /// The announcement playing over what plays, if one is.
    package var announcing: Announcing? = nil
    /// The output device is open (false once released after `output.release_after_s`, or before
    /// the first play).
    package var deviceOpen = false
    /// Who holds the room: the queue, or a cast.
    package var source: PlaybackSource = .queue
    /// The current item's cover as a cast's control point names it (DIDL-Lite `albumArtURI`);
    /// the front-ends serve it fetched (`Player.castCover`).
    package var cover: URL? = nil
}

/// What `status.loudness` shows: the current item's measured loudness (nil: not known, or
/// silent) and the gain applied to it, and where that gain comes from.
package struct ItemLoudness: Sendable, Equatable {
    package var measured: Loudness?
    package var gain: AppliedGain

    package init(measured: Loudness?, gain: AppliedGain) {
        self.measured = measured
        self.gain = gain
    }
}

/// An announcement playing (`status.announcing`): its URL, and how many wait after it.
package struct Announcing: Sendable, Equatable {
    package var url: String
    package var waiting: Int
    /// It plays over the music, lowered (`duck`).
    package var ducking = false
}

/// The sleep timer (`Player.sleep`).
package enum SleepPlan: Sendable, Equatable {
    /// Fades out over the last `fade` seconds before `at`, then pauses.
    case at(Date, fade: Double)
    /// Pauses where the current item, or the queue, ends.
    case endOf(SleepEnd)
}

package enum SleepEnd: String, Sendable, CaseIterable {
    case item, queue
}

/// Why a new item starts being heard (the `item` event).
package enum ItemReason: String, Sendable {
    /// The previous item ended and this one joined it (gapless where the formats allow).
    case advance
    /// A user's command (load, play with an id, next, previous, …).
    case user
    /// Playback went on after an item failed or after the queue changed as an item ended.
    case end
}

/// News about the queue for clients (`queue` and `item` events).
package enum QueueEvent: Sendable, Equatable {
    case queue(version: Int)
    case item(id: Int, url: URL, reason: ItemReason)
    case itemFailed(id: Int, kind: PlaybackError.Kind, message: String)
    /// A stream's title changed, as it is heard (ICY StreamTitle).
    case metadata(id: Int, title: String, artist: String?)
}

/// News about the player's settings (MPD's `mixer` and `options` subsystems).
package enum SettingsEvent: Sendable, Equatable {
    case volume(Int)
    /// repeat, random, single, consume
    case queueOptions
    case replayGain
}

extension PlaybackState {
    /// Seeking or buffering on the way back to playing.
    package var isResumingPlaying: Bool {
        switch self {
        case .seeking(_, .playing), .buffering(.playing): true
        default: false
        }
    }
}

extension PlayerError {
    init(_ error: QueueError) {
        switch error {
        case .unknownID(let id): self = .invalid("no queue item with id \(id)")
        case .positionOutOfRange(let position, let count):
            self = .invalid("position \(position) is out of range (the queue has \(count) items)")
        }
    }
}

/// How crossfades are made (`[crossfade]` in the configuration).
/// How announcements play (`[announce]`).
package struct AnnouncementSettings: Sendable, Equatable {
    /// What plays under an announcement asked to duck it is lowered to this level, 0–100 on the
    /// volume's scale (50: what volume 50 is to 100, about −18 dB).
    package var duckLevel: Int

    package init(duckLevel: Int = 50) {
        self.duckLevel = duckLevel
    }
}

package struct CrossfadeSettings: Sendable, Equatable {
    /// Consecutive tracks of one album join gaplessly even with a crossfade set.
    package var skipSameAlbum: Bool
    /// `next`, `previous` and a jump while playing fade out over this long, seconds (0: cut).
    package var manualSeconds: Double

    package init(skipSameAlbum: Bool = true, manualSeconds: Double = 0.3) {
        self.skipSameAlbum = skipSameAlbum
        self.manualSeconds = manualSeconds
    }
}
