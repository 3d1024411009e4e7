import Foundation
import Logging
import TonearmCore
import TonearmEngine
import TonearmMedia
import TonearmSync

/// Queue edits: add, remove, move, clear, options, shuffle. Each tells the engine what follows
/// the current item when that changed (`refreshNext`).
extension Player {
    // MARK: The queue

    /// Adds entries at `position` (nil: the end). `known`: tags already known by URL (the
    /// library's), so those files are not opened to read them.
    package func add(
        _ entries: [(url: URL, title: String?)], at position: Int? = nil,
        known: [URL: MediaTags] = [:]
    ) throws(PlayerError) -> (items: [QueueItem], version: Int) {
        try model.withLock { m throws(PlayerError) in
            try refuseWhileCasting(m)
            let added: [QueueItem]
            do throws(QueueError) {
                added = try edit(&m, .add(entries: entries.map { QueueEdit.Entry(url: $0.url, title: $0.title) }, at: position))
            } catch { throw PlayerError(error) }
            if !added.isEmpty {
                tags.remember(known)
                tags.request(added.map(\.url))
                publishQueue(m)
                refreshNext(&m)
                measureAhead(m)
            }
            return (added, m.queue.version)
        }
    }

    package func remove(ids: [Int]) throws(PlayerError) -> Int {
        try model.withLock { m throws(PlayerError) in
            try refuseWhileCasting(m)
            let currentRemoved = m.queue.currentID.map(ids.contains) ?? false
            let position = m.queue.currentID.flatMap { m.queue.position(of: $0) }
            let before = m.queue.version
            do throws(QueueError) { try edit(&m, .remove(ids: ids)) } catch { throw PlayerError(error) }
            if m.queue.version != before { publishQueue(m) }
            if currentRemoved, machine.currentState.isActive || isLoading {
                // The item being heard is gone: what now sits in its place plays, in the same play state.
                if let position, position < m.queue.items.count {
                    let state = machine.currentState
                    let playing = state == .playing || state.isResumingPlaying
                    open(&m, queueID: m.queue.items[position].id, cause: .jump(play: playing))
                } else {
                    machine.send(.stop)
                    stopEngine(&m)
                }
            } else {
                refreshNext(&m)
            }
            return m.queue.version
        }
    }

    var isLoading: Bool {
        if case .loading = machine.currentState { return true }
        return false
    }

    package func move(id: Int, to position: Int) throws(PlayerError) -> Int {
        try model.withLock { m throws(PlayerError) in
            try refuseWhileCasting(m)
            let before = m.queue.version
            do throws(QueueError) { try edit(&m, .move(id: id, to: position)) } catch { throw PlayerError(error) }
            if m.queue.version != before {
                publishQueue(m)
                refreshNext(&m)
            }
            return m.queue.version
        }
    }

    /// Empties the queue and stops.
    package func clear() throws(PlayerError) -> Int {
        try model.withLock { m throws(PlayerError) in
            try refuseWhileCasting(m)
            let before = m.queue.version
            _ = try? edit(&m, .clear)
            if m.queue.version != before { publishQueue(m) }
            if machine.currentState != .idle {
                machine.send(.stop)
                stopEngine(&m)
            }
            return m.queue.version
        }
    }

    package func setOptions(_ change: (inout QueueOptions) -> Void) -> QueueOptions {
        let (options, aside) = model.withLock { m -> (QueueOptions, Bool) in
            if m.cast != nil, var aside = m.cast?.aside {
                // A cast plays with the default options; the user's change is for the queue set
                // aside, and comes back with it.
                var options = aside.queue.options
                change(&options)
                options.crossfade = Self.bounded(crossfade: options.crossfade)
                m.randomSeed &+= 0x9E37_79B9_7F4A_7C15
                aside.queue.setOptions(options, randomSeed: m.randomSeed)
                m.cast?.aside = aside
                settingsEvents.yield(.queueOptions)
                return (options, true)
            }
            var options = m.queue.options
            change(&options)
            options.crossfade = Self.bounded(crossfade: options.crossfade)
            engine.setCrossfade(seconds: options.crossfade)
            let before = m.queue.version
            m.randomSeed &+= 0x9E37_79B9_7F4A_7C15
            _ = try? edit(&m, .setOptions(options: options, randomSeed: m.randomSeed))
            if m.queue.version != before {
                publishQueue(m)
                settingsEvents.yield(.queueOptions)
                refreshNext(&m)
            }
            return (m.queue.options, false)
        }
        if aside { keepAsideOptions() }
        return options
    }

    /// Reorders the items at the positions in `range` (nil: all) at random, for good (MPD's
    /// `shuffle`); returns the queue's version.
    package func shuffle(_ range: Range<Int>? = nil) throws(PlayerError) -> Int {
        try model.withLock { m throws(PlayerError) in
            try refuseWhileCasting(m)
            let before = m.queue.version
            m.randomSeed &+= 0x9E37_79B9_7F4A_7C15
            do throws(QueueError) { try edit(&m, .shuffle(range: range, seed: m.randomSeed)) } catch { throw PlayerError(error) }
            if m.queue.version != before {
                publishQueue(m)
                refreshNext(&m)
            }
            return m.queue.version
        }
    }
}

extension Player {
    /// A crossfade brought into `Bounds.crossfadeSeconds` (a hand-edited state file, a client
    /// that sent too much): not a number is no crossfade.
    static func bounded(crossfade seconds: Double) -> Double {
        seconds.isFinite ? min(max(seconds, Bounds.crossfadeSeconds.lowerBound), Bounds.crossfadeSeconds.upperBound) : 0
    }
}
