import Foundation
import TonearmMedia
import TonearmSync

package enum EngineStatus: Sendable, Equatable {
    case unknown
    case readyToPlay
    case failed(EngineFailure)
}

package enum TimeControlStatus: String, Sendable, Equatable {
    case paused, waitingToPlay, playing
}

/// The engine's observable properties, as one value so observers see consistent changes. They
/// describe the item being heard (`itemID`). The snapshot is not a channel of its own: a change
/// reaches observers with the event that made it (`ObservedChange.event`), in the event
/// stream's order, so no observer needs to read live state to know what a change is about.
package struct EngineSnapshot: Sendable, Equatable {
    /// The engine item being heard (or parked at); 0 before the first load.
    package var itemID: Int = 0
    package var status: EngineStatus = .unknown
    package var timeControlStatus: TimeControlStatus = .paused
    package var duration: Double?
    package var mediaInfo: MediaInfo?
    // No position: it moves every sample, and is read when asked (`PlayerEngine.currentTime`),
    // never published (a publication per second woke the delivery thread for no reader).
}

/// What happened, in the order it happened, each about one named engine item. This is the one
/// stream the player learns from; `observe(\.property)` is a view of it (see `EngineSnapshot`).
package enum EngineEvent: Sendable, Equatable {

    case loadStarted(itemID: Int, url: String)
    /// The decoder opened the item's file (a load, or the next item decoded ahead).
    case opened(itemID: Int, MediaInfo)
    /// A loaded item's first frames are queued and the device is open in their format.
    case ready(itemID: Int)
    /// An item decoded ahead is now being heard: the previous one was heard to its last sample.
    case started(itemID: Int)
    /// The item was heard to its end and nothing follows it.
    case didPlayToEnd(itemID: Int)
    case failed(itemID: Int, EngineFailure)
    case seekCompleted(itemID: Int, token: Int, position: Double)
    /// Playing, the output ran out of decoded audio (or got it back). `intent` is the play/pause
    /// command in force when the output saw it: news from before a newer command is stale.
    case bufferingStarted(itemID: Int, intent: Int)
    case bufferingEnded(itemID: Int, intent: Int)
    /// The first frames of a play request reached the device; latency from the request.
    case firstAudioWritten(itemID: Int, latency: Double)
    /// An underrun (xrun) was recovered.
    case underrun(itemID: Int)
    /// The output device went away (or was still away when play was asked): playback is paused
    /// at what was heard, and the engine tries to reopen the device every `reopenInterval`.
    case deviceLost(itemID: Int, EngineFailure, intent: Int)
    /// The lost device is open again; `resumes` says whether playback goes on by itself.
    case deviceRestored(itemID: Int, resumes: Bool, intent: Int)
    /// A network source's connection dropped: attempt `attempt` to reconnect starts now, `delay`
    /// seconds after the previous one.
    case reconnecting(itemID: Int, attempt: Int, delay: Double)
    /// A network stream's title changed, announced when the audio it belongs to is heard.
    case streamTitle(itemID: Int, StreamTitle)
    /// The output started or stopped consuming audio, or waits for it (`timeControlStatus`).
    case timeControlChanged(itemID: Int, TimeControlStatus)
    /// An item opened with `measuresOnTheWay` was measured from the frames decoded for it, to
    /// its end; nil: the measurement was given up (a seek, a stop, another item, a failure).
    case loudnessMeasured(itemID: Int, url: URL, LoudnessMeasurement?)
    /// Nothing played for `output.release_after_s`: the device was closed (the next play opens it).
    case deviceReleased(itemID: Int)
    /// `output.on_open` or `output.on_close` ran (see `OutputHookRun`).
    case outputHookRan(itemID: Int, OutputHookRun)

    package var itemID: Int {
        switch self {
        case .loadStarted(let id, _), .opened(let id, _), .ready(let id), .started(let id), .didPlayToEnd(let id),
            .failed(let id, _), .seekCompleted(let id, _, _), .bufferingStarted(let id, _), .bufferingEnded(let id, _),
            .firstAudioWritten(let id, _), .underrun(let id), .deviceLost(let id, _, _), .deviceRestored(let id, _, _),
            .reconnecting(let id, _, _), .streamTitle(let id, _), .timeControlChanged(let id, _),
            .loudnessMeasured(let id, _, _), .deviceReleased(let id), .outputHookRan(let id, _):
            id
        }
    }
}

package struct ObservationOptions: OptionSet, Sendable {
    package let rawValue: Int
    package init(rawValue: Int) { self.rawValue = rawValue }
    /// Deliver the current value right away.
    package static let initial = ObservationOptions(rawValue: 1)
    /// Deliver every later change.
    package static let new = ObservationOptions(rawValue: 2)
}

package struct ObservedChange<Value: Sendable>: Sendable {
    /// The engine item the new value is about (the snapshot's `itemID` at that change).
    package let itemID: Int
    package let oldValue: Value?
    package let newValue: Value
    /// The event that carried the change; nil for the `.initial` value.
    package let event: EngineEvent?
}

/// Keeps an observation alive; `invalidate()` or dropping the token stops delivery.
package final class ObservationToken: Sendable {
    private let cancel: Locked<(@Sendable () -> Void)?>

    init(cancel: @escaping @Sendable () -> Void) { self.cancel = Locked(cancel) }

    package func invalidate() {
        let action = cancel.withLock { action in
            defer { action = nil }
            return action
        }
        action?()
    }

    deinit { invalidate() }
}

/// Registry and delivery of observations. Every callback runs on one delivery thread per engine
/// (`tonearm-events`), in the order the changes happened; callbacks must not block it.
///
/// One channel: `update` changes the snapshot without telling anyone; `post` delivers an event
/// with the snapshot before and after it (all the changes made since the previous event), to the
/// event handlers first (the adapter), then to the property observers whose value changed.
///
/// The output thread publishes and posts every change it makes, where nothing may allocate, so
/// neither does: a delivery is a value (the change and the handlers registered then, an
/// array shared, not copied) appended to the delivery thread's queue, whose arrays keep their
/// capacity.
final class ObserverRegistry: Sendable {
    typealias SnapshotHandler = @Sendable (_ old: EngineSnapshot?, _ new: EngineSnapshot, _ event: EngineEvent?) -> Void
    typealias EventHandler = @Sendable (EngineEvent) -> Void

    private enum Delivery: Sendable {
        case initial(EngineSnapshot, to: SnapshotHandler)
        case event(EngineEvent, old: EngineSnapshot, new: EngineSnapshot, to: [EventHandler], observers: [SnapshotHandler])
    }

    private let queue = WorkerThread<Delivery>(name: "tonearm-events") { delivery in
        switch delivery {
        case .initial(let snapshot, let handler):
            handler(nil, snapshot, nil)
        case .event(let event, let old, let new, let handlers, let observers):
            for handler in handlers { handler(event) }
            if old != new { for observer in observers { observer(old, new, event) } }
        }
    }

    /// The engine is gone: what was queued is delivered, then the thread ends.
    deinit { queue.finish() }

    /// Handlers in registration order, beside their ids: the adapter (registered first) has
    /// updated the player's state before any later observer passes the same change on to clients.
    private struct Handlers<Handler: Sendable>: Sendable {
        var ids: [Int] = []
        var list: [Handler] = []

        mutating func add(_ id: Int, _ handler: Handler) {
            ids.append(id)
            list.append(handler)
        }

        mutating func remove(_ id: Int) {
            guard let index = ids.firstIndex(of: id) else { return }
            ids.remove(at: index)
            list.remove(at: index)
        }
    }

    private struct State {
        /// The engine's state now: changed by `update`, delivered by the next `post`.
        var snapshot = EngineSnapshot()
        /// The snapshot as of the last event posted: what observers have been told.
        var delivered = EngineSnapshot()
        var next = 0
        var snapshotHandlers = Handlers<SnapshotHandler>()
        var eventHandlers = Handlers<EventHandler>()
    }
    private let state = Locked(State())

    var snapshot: EngineSnapshot { state.withLock { $0.snapshot } }

    /// Changes the snapshot; observers learn of it with the next event. Returns what `change` returns.
    func update<Result>(_ change: (inout EngineSnapshot) -> Result) -> Result {
        state.withLock { change(&$0.snapshot) }
    }

    func post(_ event: EngineEvent) {
        state.withLock { state in
            let old = state.delivered
            state.delivered = state.snapshot
            guard !state.eventHandlers.list.isEmpty || !state.snapshotHandlers.list.isEmpty else { return }
            // Enqueued under the lock so deliveries keep the order of posts.
            queue.enqueue(
                .event(
                    event, old: old, new: state.snapshot, to: state.eventHandlers.list,
                    observers: state.snapshotHandlers.list))
        }
    }

    func addSnapshotHandler(initial: Bool, _ handler: @escaping SnapshotHandler) -> ObservationToken {
        let id = state.withLock { state in
            state.next += 1
            state.snapshotHandlers.add(state.next, handler)
            if initial { queue.enqueue(.initial(state.delivered, to: handler)) }
            return state.next
        }
        return ObservationToken { [weak self] in self?.state.withLock { $0.snapshotHandlers.remove(id) } }
    }

    func addEventHandler(_ handler: @escaping EventHandler) -> ObservationToken {
        let id = state.withLock { state in
            state.next += 1
            state.eventHandlers.add(state.next, handler)
            return state.next
        }
        return ObservationToken { [weak self] in self?.state.withLock { $0.eventHandlers.remove(id) } }
    }
}
