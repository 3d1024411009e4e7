import Foundation

/// One entry of the play queue. The id is the queue's own handle for the entry: it survives
/// moves and is never given to another entry, so a client holding it can never act on the wrong one.
package struct QueueItem: Sendable, Equatable, Codable {
    package let id: Int
    package var url: URL
    /// From a playlist's `#EXTINF` or PLS `TitleN`; nil when the source gave none.
    package var title: String?

    package init(id: Int, url: URL, title: String? = nil) {
        self.id = id
        self.url = url
        self.title = title
    }
}

/// MPD's four playback switches.
package struct QueueOptions: Sendable, Equatable, Codable {
    package var `repeat`: Bool
    package var single: Bool
    package var consume: Bool
    package var random: Bool
    /// With `single`: single mode ends once the current item has ended (MPD's `single oneshot`).
    package var oneshot: Bool
    /// How long the end of an item and the start of the next overlap, seconds (0: gapless joins).
    /// Kept with the queue's play options, as MPD keeps it; the player keeps it in its bounds.
    package var crossfade: Double

    package init(
        repeat: Bool = false, single: Bool = false, consume: Bool = false, random: Bool = false,
        oneshot: Bool = false, crossfade: Double = 0
    ) {
        self.repeat = `repeat`
        self.single = single
        self.consume = consume
        self.random = random
        self.oneshot = oneshot
        self.crossfade = crossfade
    }

    private enum CodingKeys: String, CodingKey { case `repeat`, single, consume, random, oneshot, crossfade }

    package init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.repeat = try c.decode(Bool.self, forKey: .repeat)
        single = try c.decode(Bool.self, forKey: .single)
        consume = try c.decode(Bool.self, forKey: .consume)
        random = try c.decode(Bool.self, forKey: .random)
        // State files from before oneshot existed have none.
        oneshot = try c.decodeIfPresent(Bool.self, forKey: .oneshot) ?? false
        // Nor crossfade (the player brings a hand-edited value into its bounds).
        crossfade = try c.decodeIfPresent(Double.self, forKey: .crossfade) ?? 0
    }
}

package enum QueueError: Error, Sendable, Equatable {
    case unknownID(Int)
    case positionOutOfRange(Int, count: Int)
}

/// The daemon's play queue, modelled on MPD's: items in the user's order, the item being heard,
/// the options, and (with `random` on) a stored shuffle order.
///
/// A pure value: no I/O, no clock, no global randomness. The shuffle comes from a PRNG whose state
/// is stored here, so a queue is deterministic for a seed and survives a Codable round trip exactly.
/// Every call is O(n) at worst, and no input (unknown ids, an empty queue, no current item) traps.
package struct PlayQueue: Sendable, Equatable, Codable {
    package private(set) var items: [QueueItem] = []
    /// The item being heard (or paused or stopped at); nil when none.
    package private(set) var currentID: Int?
    /// +1 on every call that changes items, current or options; never on a no-op. Clients compare
    /// it to know whether their copy of the queue is stale.
    package private(set) var version: Int = 0
    package private(set) var options = QueueOptions()
    /// For each position in `items`: the version at which what sits there last changed (added,
    /// moved, or shifted by an edit before it). MPD's `plchanges` lists the positions whose
    /// version is newer than the client's copy.
    package private(set) var positionVersions: [Int] = []

    /// The id the next added item gets. Only ever grows, so ids are never reused, not even
    /// after `clear()`: a client's stale id then fails loudly instead of hitting a new item.
    private var nextID: Int = 0
    /// With `random` on: a permutation of the item ids, the play order. Empty with `random` off,
    /// where the play order is simply `items`.
    private var shuffleOrder: [Int] = []
    private var rng = SplitMix64(seed: 0)

    package init() {}

    // MARK: Reading

    package var current: QueueItem? { currentID.flatMap { item(id: $0) } }

    package func item(id: Int) -> QueueItem? {
        items.first { $0.id == id }
    }

    package func position(of id: Int) -> Int? {
        items.firstIndex { $0.id == id }
    }

    /// The ids in the order they will be played: the item order, or the shuffle with `random` on.
    package var playOrder: [Int] {
        options.random ? shuffleOrder : items.map(\.id)
    }

    /// The first item in play order (for `play` with nothing current).
    package var first: Int? {
        orderCount > 0 ? orderID(at: 0) : nil
    }

    // MARK: Editing

    /// Inserts at `position` (nil = end; 0...count allowed, else `positionOutOfRange`). Ids are new,
    /// increasing, never reused. Returns the new items. Empty input: no change, no version bump
    /// (the position is still checked, so a bad request fails the same way whatever it carries).
    @discardableResult
    package mutating func add(_ entries: [(url: URL, title: String?)], at position: Int? = nil) throws(QueueError) -> [QueueItem] {
        let at = position ?? items.count
        guard at >= 0, at <= items.count else { throw .positionOutOfRange(at, count: items.count) }
        guard !entries.isEmpty else { return [] }

        var added: [QueueItem] = []
        added.reserveCapacity(entries.count)
        for entry in entries {
            added.append(QueueItem(id: nextID, url: entry.url, title: entry.title))
            nextID += 1
        }
        items.insert(contentsOf: added, at: at)
        if options.random { insertIntoShuffle(added.map(\.id)) }
        version += 1
        markChanged(from: at)
        return added
    }

    /// All-or-nothing: if any id is unknown, nothing is removed. Removing the current item sets
    /// `currentID` to nil; what to play then is the player's decision, not the queue's.
    package mutating func remove(ids: [Int]) throws(QueueError) {
        let removed = Set(ids)
        let positions: [Int]
        if removed.count <= 16 {
            // A few ids (the usual case): found by scanning for each, no hashing of every item.
            var found: [Int] = []
            for id in removed {
                guard let at = position(of: id) else { throw .unknownID(ids.first { position(of: $0) == nil } ?? id) }
                found.append(at)
            }
            positions = found.sorted()
        } else {
            positions = items.indices.filter { removed.contains(items[$0].id) }
            if positions.count < removed.count, let unknown = ids.first(where: { position(of: $0) == nil }) {
                throw .unknownID(unknown)
            }
        }
        guard let first = positions.first else { return }
        dropItems(at: positions, removed)
        version += 1
        markChanged(from: first)
    }

    /// Moves the item so it ends at `position` (0..<count). The shuffle order is left alone: moving
    /// an item in the list is not a reason to change when it plays.
    package mutating func move(id: Int, to position: Int) throws(QueueError) {
        guard let from = self.position(of: id) else { throw .unknownID(id) }
        guard position >= 0, position < items.count else { throw .positionOutOfRange(position, count: items.count) }
        guard from != position else { return }
        // One shift of the items between (as memory), where remove and insert would shift twice.
        items.withUnsafeMutableBufferPointer { buffer in
            let base = buffer.baseAddress!
            let moving = (base + from).move()
            if from > position {
                (base + position + 1).moveInitialize(from: base + position, count: from - position)
            } else {
                (base + from).moveInitialize(from: base + from + 1, count: position - from)
            }
            (base + position).initialize(to: moving)
        }
        version += 1
        markChanged(from: min(from, position), through: max(from, position))
    }

    /// Reorders the items in `range` (positions) at random, for good: MPD's `shuffle`. The item
    /// being heard, when inside the range, goes to the range's start, so it keeps playing and
    /// everything after it is still to come. The play order with `random` on is left alone.
    package mutating func shuffle(_ range: Range<Int>? = nil, seed: UInt64) throws(QueueError) {
        let range = range ?? 0..<items.count
        guard range.lowerBound >= 0, range.upperBound <= items.count else {
            throw .positionOutOfRange(range.lowerBound < 0 ? range.lowerBound : range.upperBound, count: items.count)
        }
        guard range.count > 1 else { return }
        var start = range.lowerBound
        if let currentID, let at = position(of: currentID), range.contains(at) {
            items.swapAt(range.lowerBound, at)
            start += 1
        }
        var slice = Array(items[start..<range.upperBound])
        var generator = SplitMix64(seed: seed)
        generator.shuffle(&slice)
        items.replaceSubrange(start..<range.upperBound, with: slice)
        version += 1
        markChanged(from: range.lowerBound, through: range.upperBound - 1)
    }

    /// Positions whose item changed after `version` (MPD's `plchanges`).
    package func positionsChanged(since version: Int) -> [Int] {
        positionVersions.indices.filter { positionVersions[$0] > version }
    }

    /// Removes everything. A no-op on an empty queue with no current item.
    package mutating func clear() {
        guard !items.isEmpty || currentID != nil else { return }
        items = []
        shuffleOrder = []
        positionVersions = []
        currentID = nil
        version += 1
    }

    /// Puts back a queue set aside earlier (a cast gives the room back): its items, ids, current
    /// item, options and shuffle, as they were. The version and the ids still to give only grow
    /// (clients compare versions, and an id the set-aside queue never had is not reused), and
    /// every position counts as changed.
    package mutating func bringBack(_ other: PlayQueue) {
        let newVersion = max(version, other.version) + 1
        let newNextID = max(nextID, other.nextID)
        self = other
        version = newVersion
        nextID = newNextID
        positionVersions = Array(repeating: newVersion, count: items.count)
    }

    /// Bumps the version only if the options changed. Turning `random` on builds a new shuffle from
    /// `randomSeed`; while `random` stays on the seed is ignored, so toggling `repeat` does not
    /// reshuffle what the listener is in the middle of. Items added later are shuffled in by `add`.
    package mutating func setOptions(_ options: QueueOptions, randomSeed: UInt64) {
        guard options != self.options else { return }
        let turnsRandomOn = options.random && !self.options.random
        self.options = options
        if turnsRandomOn {
            rng = SplitMix64(seed: randomSeed)
            buildShuffle()
        } else if !options.random {
            shuffleOrder = []
        }
        version += 1
    }

    /// The player says which item is now heard (nil: none). Unknown id -> `unknownID`.
    /// The shuffle order is not changed: the player also calls this after `previous`, and
    /// reordering then would make "previous, previous" bounce between two items.
    package mutating func setCurrent(_ id: Int?) throws(QueueError) {
        if let id, position(of: id) == nil { throw .unknownID(id) }
        guard id != currentID else { return }
        currentID = id
        version += 1
    }

    /// Called when item `id` started being heard after `finished` ended: with `consume`, `finished`
    /// is removed. Sets current to `id`. One version bump for the whole step.
    ///
    /// A `finished` that is no longer in the queue (the user removed it while it played) is ignored.
    /// `finished == id` (single + repeat) is not consumed: removing it would remove what now plays.
    package mutating func advance(from finished: Int?, to id: Int) throws(QueueError) {
        guard position(of: id) != nil else { throw .unknownID(id) }
        var changed = false
        var consumedAt: Int?
        if options.consume, let finished, finished != id, let at = position(of: finished) {
            dropItems(at: [at], [finished])
            consumedAt = at
            changed = true
        }
        if currentID != id {
            currentID = id
            changed = true
        }
        if changed { version += 1 }
        if let consumedAt { markChanged(from: consumedAt) }
    }

    /// Item `id` played to its end and nothing was joined to it (the queue's end, `single`, or
    /// what follows is opened anew): with `consume` it is removed, as MPD does, and current goes
    /// with it. Returns whether the queue changed.
    package mutating func finish(_ id: Int) -> Bool {
        guard options.consume, let at = position(of: id) else { return false }
        dropItems(at: [at], [id])
        version += 1
        markChanged(from: at)
        return true
    }

    // MARK: Play order

    /// The item to play after `id` when it ends on its own (gapless pre-roll uses this):
    /// single && repeat -> the same id; single && !repeat -> nil; otherwise the next in play order,
    /// and at the end: repeat -> the first in play order, else nil. Unknown id -> nil.
    package func next(after id: Int) -> Int? {
        guard let index = orderIndex(of: id) else { return nil }
        if options.single { return options.repeat ? id : nil }
        return step(from: index, by: 1)
    }

    /// Where the user's `next` goes: like `next(after:)` but ignoring `single`, because (as in MPD)
    /// the user's next always moves on. Wraps with `repeat`.
    package func userNext(after id: Int) -> Int? {
        guard let index = orderIndex(of: id) else { return nil }
        return step(from: index, by: 1)
    }

    /// The item before `id` in play order; at the start: repeat -> the last, else nil.
    package func previous(before id: Int) -> Int? {
        guard let index = orderIndex(of: id) else { return nil }
        return step(from: index, by: -1)
    }

    private func step(from index: Int, by delta: Int) -> Int? {
        let target = index + delta
        if target >= 0, target < orderCount { return orderID(at: target) }
        guard options.repeat else { return nil }
        return orderID(at: target < 0 ? orderCount - 1 : 0)
    }

    // The play order read without building an array: with random off it is `items` itself.
    private var orderCount: Int { options.random ? shuffleOrder.count : items.count }
    private func orderID(at index: Int) -> Int { options.random ? shuffleOrder[index] : items[index].id }
    private func orderIndex(of id: Int) -> Int? {
        options.random ? shuffleOrder.firstIndex(of: id) : position(of: id)
    }

    // MARK: Internals

    /// Stamps positions `from` through `through` (default: the end) with the current version,
    /// and fits the stamps to the item count.
    private mutating func markChanged(from: Int, through: Int? = nil) {
        if positionVersions.count != items.count {
            positionVersions = Array(positionVersions.prefix(items.count))
            positionVersions += Array(repeating: version, count: items.count - positionVersions.count)
        }
        let last = min(through ?? items.count - 1, items.count - 1)
        guard from <= last else { return }
        for index in from...last { positionVersions[index] = version }
    }

    /// Removes the items at `positions` (ascending), whose ids are `ids`, from items, the shuffle
    /// and current, in O(n). Removed one by one from the back: each removal moves the items
    /// after it as plain memory, where filtering the whole array touches (retains and releases)
    /// every item, and a few removals from a long queue are the common case.
    private mutating func dropItems(at positions: [Int], _ ids: Set<Int>) {
        if positions.count <= 64 {
            for position in positions.reversed() { items.remove(at: position) }
        } else {
            items.removeAll { ids.contains($0.id) }
        }
        if !shuffleOrder.isEmpty { shuffleOrder.removeAll { ids.contains($0) } }
        if let currentID, ids.contains(currentID) { self.currentID = nil }
    }

    /// A fresh Fisher–Yates shuffle of all ids. The current item goes first, as in MPD, so that
    /// every other item is heard once before the order wraps.
    private mutating func buildShuffle() {
        var order = items.map(\.id)
        rng.shuffle(&order)
        if let currentID, let index = order.firstIndex(of: currentID) { order.swapAt(0, index) }
        shuffleOrder = order
    }

    /// Puts new ids at random places after the current item in the shuffle (anywhere if there is
    /// no current), so they are all still to come. A uniform random interleaving of the shuffled
    /// new ids with the old tail: O(n), where inserting one by one would be O(n·k).
    private mutating func insertIntoShuffle(_ newIDs: [Int]) {
        var fresh = newIDs
        rng.shuffle(&fresh)
        let start = currentID.flatMap { shuffleOrder.firstIndex(of: $0) }.map { $0 + 1 } ?? 0
        var merged = Array(shuffleOrder[..<start])
        merged.reserveCapacity(shuffleOrder.count + fresh.count)
        var old = start
        var new = 0
        while old < shuffleOrder.count || new < fresh.count {
            let oldLeft = shuffleOrder.count - old
            let newLeft = fresh.count - new
            // Taking a new id with probability newLeft / (oldLeft + newLeft) makes every
            // interleaving equally likely.
            if rng.below(oldLeft + newLeft) < newLeft {
                merged.append(fresh[new])
                new += 1
            } else {
                merged.append(shuffleOrder[old])
                old += 1
            }
        }
        shuffleOrder = merged
    }

    // MARK: Codable

    private enum CodingKeys: String, CodingKey {
        case items, currentID, version, options, nextID, shuffleOrder, rng, positionVersions
    }

    /// Ids and versions go to clients as JSON numbers; past 2^53 many clients lose precision.
    /// Bounding them here also means `+= 1` can never overflow on a decoded queue.
    private static let maxCounter = 1 << 53

    /// Decodes and checks the invariants the methods rely on, so a damaged state file fails
    /// here rather than making the queue misbehave later.
    package init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        items = try c.decode([QueueItem].self, forKey: .items)
        currentID = try c.decodeIfPresent(Int.self, forKey: .currentID)
        version = try c.decode(Int.self, forKey: .version)
        options = try c.decode(QueueOptions.self, forKey: .options)
        nextID = try c.decode(Int.self, forKey: .nextID)
        shuffleOrder = try c.decode([Int].self, forKey: .shuffleOrder)
        rng = try c.decode(SplitMix64.self, forKey: .rng)
        // Older state files have none: every position counts as changed at the saved version.
        positionVersions =
            try c.decodeIfPresent([Int].self, forKey: .positionVersions)
            ?? Array(repeating: version, count: items.count)

        func fail(_ why: String) -> DecodingError {
            .dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "PlayQueue: \(why)"))
        }
        let ids = items.map(\.id)
        let idSet = Set(ids)
        guard idSet.count == ids.count else { throw fail("duplicate item ids") }
        guard ids.allSatisfy({ $0 >= 0 && $0 < nextID }) else { throw fail("an item id is negative or not below nextID") }
        guard nextID <= Self.maxCounter, (0...Self.maxCounter).contains(version) else { throw fail("counter out of range") }
        if let currentID, !idSet.contains(currentID) { throw fail("current id \(currentID) is not in the queue") }
        guard positionVersions.count == items.count, positionVersions.allSatisfy({ (0...version).contains($0) }) else {
            throw fail("position versions do not fit the items")
        }
        if options.random {
            guard shuffleOrder.count == ids.count, Set(shuffleOrder) == idSet else {
                throw fail("shuffle order is not a permutation of the item ids")
            }
        } else if !shuffleOrder.isEmpty {
            throw fail("shuffle order present with random off")
        }
    }
}

/// SplitMix64 (Steele, Lea, Flood 2014): tiny, fast, and good enough to shuffle a playlist.
/// Written out rather than borrowed from the standard library so the sequence for a seed never
/// changes under us, and its state can be stored and encoded.
struct SplitMix64: Sendable, Equatable, Codable {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A uniform integer in 0..<bound (bound > 0), without modulo bias (Lemire's method).
    mutating func below(_ bound: Int) -> Int {
        precondition(bound > 0, "below(_:) needs a positive bound")
        let b = UInt64(bound)
        var (high, low) = next().multipliedFullWidth(by: b)
        if low < b {
            let threshold = (0 &- b) % b
            while low < threshold { (high, low) = next().multipliedFullWidth(by: b) }
        }
        return Int(high)
    }

    /// Fisher–Yates.
    mutating func shuffle<T>(_ array: inout [T]) {
        guard array.count > 1 else { return }
        for i in stride(from: array.count - 1, to: 0, by: -1) {
            array.swapAt(i, below(i + 1))
        }
    }
}
