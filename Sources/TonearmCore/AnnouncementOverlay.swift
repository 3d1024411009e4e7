/// Announcements over the playback machine (a doorbell chime, a spoken message): an overlay,
/// not a state of the machine. While one plays, the machine keeps the state it had (playing
/// stays playing, paused stays paused) and the queue does not change; the overlay holds the
/// clip being played, those waiting after it, and the point to come back to. Pure: the player
/// feeds it events and carries out the effect each returns (`Player+Announce`).
///
/// A run of announcements (the first and those that come while it plays) either interrupts what
/// plays, to come back to it after the last, or ducks it: the first asked `duck` while something
/// plays, the music goes on lower under the clips and nothing is to come back to. The first of a
/// run decides for those that join it.
package struct AnnouncementOverlay: Sendable, Equatable {
    /// One announcement: what it plays, at what volume (nil: the player's).
    package struct Clip: Sendable, Equatable {
        package let url: String
        package let volume: Int?
        /// Asked to play over the music, the music lowered, rather than instead of it.
        package let duck: Bool
        package init(url: String, volume: Int?, duck: Bool = false) {
            self.url = url
            self.volume = volume
            self.duck = duck
        }
    }

    /// Where playback stood when the first announcement began, to come back to.
    package struct ReturnPoint: Sendable, Equatable {
        /// The queue item heard (nil: nothing was loaded, nothing to come back to).
        package let queueID: Int?
        package let position: Double
        /// It was playing (or about to: buffering, seeking); else paused or ready.
        package let playing: Bool
        /// A live stream: it rejoins live rather than at `position`.
        package let live: Bool
        package init(queueID: Int?, position: Double, playing: Bool, live: Bool) {
            self.queueID = queueID
            self.position = position
            self.playing = playing
            self.live = live
        }
    }

    package enum Phase: String, Sendable, CaseIterable {
        /// No announcement.
        case quiet
        /// One plays, none waits.
        case announcing
        /// One plays and more wait after it.
        case announcingWithMoreWaiting
        /// One plays over the music, lowered; none waits.
        case ducking
        /// One plays over the music and more wait after it.
        case duckingWithMoreWaiting
    }

    package enum Event: Sendable, Equatable {
        /// A new announcement, and where playback stands as it comes.
        case announce(Clip, returnPoint: ReturnPoint)
        /// The clip being played ended, or could not be played.
        case clipEnded
        case clipFailed
        /// A user's command (play, pause, stop, seek, a load or a jump) ends every announcement.
        case interrupted
    }

    package enum Effect: Sendable, Equatable {
        /// Fade out what plays, then play the clip (the first of a run).
        case fadeOutAndPlay(Clip)
        /// Lower what plays and play the clip over it (the first of a ducking run).
        case duckAndPlay(Clip)
        /// Play the next clip (one just ended).
        case play(Clip)
        /// Every announcement is done: back to where playback stood.
        case resume(ReturnPoint)
        /// Announcements cut short by a user's command, which decides where playback goes.
        case abandon(ReturnPoint)
        /// Every ducked announcement is done: what plays comes back up to its level.
        case unduck
        /// Ducked announcements cut short by a user's command: the clip stops, the level comes
        /// back, and the command acts on what plays.
        case abandonDucked
        /// Queued behind the one playing.
        case queued(position: Int)
        /// Nothing to do (news about an announcement that is over).
        case none
        /// Refused: too many wait already.
        case refused
    }

    /// At most this many wait behind the one playing.
    package static let maximumWaiting = 16

    package private(set) var playing: Clip?
    package private(set) var waiting: [Clip] = []
    package private(set) var returnPoint: ReturnPoint?
    /// The run plays over the music (nil point: nothing to come back to).
    package private(set) var ducks = false

    package init() {}

    package var phase: Phase {
        guard playing != nil else { return .quiet }
        if ducks { return waiting.isEmpty ? .ducking : .duckingWithMoreWaiting }
        return waiting.isEmpty ? .announcing : .announcingWithMoreWaiting
    }

    package mutating func handle(_ event: Event) -> Effect {
        switch (event, playing) {
        case (.announce(let clip, let point), nil):
            playing = clip
            // Over what plays; over nothing playing there is nothing to lower.
            if clip.duck && point.playing {
                ducks = true
                return .duckAndPlay(clip)
            }
            returnPoint = point
            return .fadeOutAndPlay(clip)
        case (.announce(let clip, _), _?):
            guard waiting.count < Self.maximumWaiting else { return .refused }
            waiting.append(clip)
            return .queued(position: waiting.count)
        case (.clipEnded, _?), (.clipFailed, _?):
            if !waiting.isEmpty {
                let next = waiting.removeFirst()
                playing = next
                return .play(next)
            }
            if ducks {
                _ = finish()
                return .unduck
            }
            return .resume(finish())
        case (.interrupted, _?):
            if ducks {
                _ = finish()
                return .abandonDucked
            }
            return .abandon(finish())
        case (.clipEnded, nil), (.clipFailed, nil), (.interrupted, nil):
            return .none
        }
    }

    private mutating func finish() -> ReturnPoint {
        let point = returnPoint ?? ReturnPoint(queueID: nil, position: 0, playing: false, live: false)
        playing = nil
        waiting = []
        returnPoint = nil
        ducks = false
        return point
    }
}
