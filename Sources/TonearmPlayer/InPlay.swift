import TonearmEngine
import TonearmMedia

extension Player {
    /// What the player knows of one engine item in play: the current one, or the one named to
    /// the engine to follow it. Kept in `Model.inPlay` by engine id; an item leaves when playback
    /// moves past it or another item is opened in its place.
    struct InPlay {
        /// The queue item it plays.
        let queueID: Int
        /// Why it was opened, for its `item` event.
        var reason: ItemReason
        /// From its `opened` news.
        var media: MediaInfo?
        /// Plays once ready (a load or a queue jump asked to play).
        var playsOnReady = false
        /// The load or jump waiting for its `ready` or `failed` news.
        var loadWaiter: CheckedContinuation<LoadOutcome, Never>?
    }
}
