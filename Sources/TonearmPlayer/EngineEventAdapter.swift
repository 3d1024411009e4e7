import TonearmCore
import TonearmEngine

/// What the adapter needs to know to read an engine event: which engine item the state machine
/// is about, which item was named to follow it, which seek and which play/pause command are the
/// latest. The player keeps it, under its lock, and changes it with every command.
package struct AdapterContext: Sendable, Equatable {
    /// The engine item the state machine's state describes (loaded, heard or parked at).
    package var currentItem: Int?
    /// The engine item named to follow `currentItem` gaplessly.
    package var pendingNext: Int?
    /// Only the latest seek's landing ends `seeking`.
    package var expectedSeekToken: Int?
    /// The intent number of the latest play or pause command (see `PlayerEngine.play`).
    package var intent: Int
    /// A failure of the current item is handled by the player (a queue skips it), not the machine.
    package var skipsFailures: Bool

    package init(
        currentItem: Int? = nil, pendingNext: Int? = nil, expectedSeekToken: Int? = nil, intent: Int = 0,
        skipsFailures: Bool = false
    ) {
        self.currentItem = currentItem
        self.pendingNext = pendingNext
        self.expectedSeekToken = expectedSeekToken
        self.intent = intent
        self.skipsFailures = skipsFailures
    }
}

/// Turns engine events into `PlaybackAction`s, the way an AVPlayer adapter turns KVO changes
/// into actions: a pure function of the event and the context, table-tested
/// (`EngineEventAdapterTests`). News about another item than the current one, a seek that is not
/// the latest, or play-state news from before the latest play/pause command is stale and yields
/// nothing, so it can never move the state machine.
package enum EngineEventAdapter {
    package static func actions(for event: EngineEvent, context: inout AdapterContext) -> [PlaybackAction] {
        let isCurrent = event.itemID == context.currentItem
        switch event {
        case .loadStarted, .opened, .firstAudioWritten, .underrun, .reconnecting, .streamTitle, .timeControlChanged,
            .loudnessMeasured, .deviceReleased, .outputHookRan:
            return []
        case .ready:
            return isCurrent ? [.didBecomeReady] : []
        case .started(let itemID):
            guard itemID == context.pendingNext else { return [] }
            context.currentItem = itemID
            context.pendingNext = nil
            context.expectedSeekToken = nil
            return [.didAdvance]
        case .didPlayToEnd:
            return isCurrent ? [.didReachEnd] : []
        case .failed(_, let failure):
            // A queue skips a file that cannot play; a device that cannot play fails the player
            // (recoverable: `retry` once the device is back).
            guard isCurrent, !(context.skipsFailures && !failure.isDeviceFailure) else { return [] }
            return [.didFail(PlaybackError(failure))]
        case .seekCompleted(_, let token, _):
            guard isCurrent, token == context.expectedSeekToken else { return [] }
            context.expectedSeekToken = nil
            return [.didFinishSeeking]
        case .bufferingStarted(_, let intent):
            return isCurrent && intent >= context.intent ? [.didStartBuffering] : []
        case .bufferingEnded(_, let intent):
            return isCurrent && intent >= context.intent ? [.didFinishBuffering] : []
        case .deviceLost(_, _, let intent):
            return isCurrent && intent >= context.intent ? [.deviceLost] : []
        case .deviceRestored(_, let resumes, let intent):
            // Only a pause the loss caused is undone; the engine decides (resume_after_interruption).
            return isCurrent && resumes && intent >= context.intent ? [.deviceRestored] : []
        }
    }
}
