import Foundation
import Testing

@testable import TonearmCore

private func song(_ name: String) -> (url: URL, title: String?) {
    (URL(fileURLWithPath: "/music/\(name).flac"), nil)
}

private func songs(_ count: Int) -> [(url: URL, title: String?)] {
    (0..<count).map { song("s\($0)") }
}

/// A queue holding `count` items (ids 0..<count) with the given options.
private func queue(_ count: Int, _ options: QueueOptions = QueueOptions(), seed: UInt64 = 1) throws -> PlayQueue {
    var q = PlayQueue()
    try q.add(songs(count))
    q.setOptions(options, randomSeed: seed)
    return q
}

private func ids(_ q: PlayQueue) -> [Int] { q.items.map(\.id) }

@Suite("PlayQueue: editing")
struct PlayQueueEditingTests {
    @Test func emptyQueue() {
        let q = PlayQueue()
        #expect(q.items.isEmpty)
        #expect(q.currentID == nil)
        #expect(q.current == nil)
        #expect(q.version == 0)
        #expect(q.first == nil)
        #expect(q.options == QueueOptions())
        #expect(q.next(after: 0) == nil)
        #expect(q.userNext(after: 0) == nil)
        #expect(q.previous(before: 0) == nil)
        #expect(q.item(id: 0) == nil)
        #expect(q.position(of: 0) == nil)
    }

    @Test func addAppendsWithNewIncreasingIDs() throws {
        var q = PlayQueue()
        let first = try q.add([song("a"), (URL(string: "http://radio/x")!, "Radio X")])
        #expect(first.map(\.id) == [0, 1])
        #expect(first[1].title == "Radio X")
        #expect(q.items == first)
        #expect(q.version == 1)
        let second = try q.add([song("c")])
        #expect(second.map(\.id) == [2])
        #expect(ids(q) == [0, 1, 2])
        #expect(q.version == 2)
        #expect(q.item(id: 1)?.url.absoluteString == "http://radio/x")
        #expect(q.position(of: 2) == 2)
    }

    @Test func addAtZeroAndAtCount() throws {
        var q = try queue(2)
        try q.add([song("front")], at: 0)
        #expect(ids(q) == [2, 0, 1])
        try q.add([song("back"), song("back2")], at: q.items.count)
        #expect(ids(q) == [2, 0, 1, 3, 4])
        try q.add([song("middle")], at: 2)
        #expect(ids(q) == [2, 0, 5, 1, 3, 4])
    }

    @Test(arguments: [-1, 3, Int.max, Int.min])
    func addOutOfRangeChangesNothing(position: Int) throws {
        var q = try queue(2)
        let before = q
        #expect(throws: QueueError.positionOutOfRange(position, count: 2)) { try q.add([song("x")], at: position) }
        #expect(q == before)
    }

    @Test func addNothingIsANoOp() throws {
        var q = try queue(2)
        let before = q
        #expect(try q.add([]) == [])
        #expect(try q.add([], at: 0) == [])
        #expect(q == before)
    }

    @Test func idsAreNeverReusedAfterRemoveOrClear() throws {
        var q = try queue(3)
        try q.remove(ids: [2])
        #expect(try q.add([song("x")]).map(\.id) == [3])
        q.clear()
        #expect(try q.add([song("y")]).map(\.id) == [4])
    }

    @Test func removeIsAllOrNothing() throws {
        var q = try queue(4)
        let before = q
        #expect(throws: QueueError.unknownID(9)) { try q.remove(ids: [1, 9, 2]) }
        #expect(q == before)
        try q.remove(ids: [1, 3, 1])
        #expect(ids(q) == [0, 2])
        #expect(q.version == before.version + 1)
        try q.remove(ids: [])
        #expect(q.version == before.version + 1)
    }

    @Test func removingTheCurrentItemClearsCurrent() throws {
        var q = try queue(3)
        try q.setCurrent(1)
        try q.remove(ids: [0])
        #expect(q.currentID == 1)
        try q.remove(ids: [1])
        #expect(q.currentID == nil)
        #expect(q.current == nil)
        #expect(ids(q) == [2])
    }

    @Test func moveKeepsIDs() throws {
        var q = try queue(4)
        try q.setCurrent(2)
        try q.move(id: 2, to: 0)
        #expect(ids(q) == [2, 0, 1, 3])
        #expect(q.currentID == 2)
        try q.move(id: 2, to: 3)
        #expect(ids(q) == [0, 1, 3, 2])
        try q.move(id: 0, to: 2)
        #expect(ids(q) == [1, 3, 0, 2])
        #expect(q.item(id: 0)?.url.lastPathComponent == "s0.flac")
    }

    @Test func moveErrorsAndNoOp() throws {
        var q = try queue(3)
        let before = q
        #expect(throws: QueueError.positionOutOfRange(3, count: 3)) { try q.move(id: 0, to: 3) }
        #expect(throws: QueueError.positionOutOfRange(-1, count: 3)) { try q.move(id: 0, to: -1) }
        #expect(throws: QueueError.unknownID(7)) { try q.move(id: 7, to: 0) }
        try q.move(id: 1, to: 1)
        #expect(q == before)
        var empty = PlayQueue()
        #expect(throws: QueueError.unknownID(0)) { try empty.move(id: 0, to: 0) }
    }

    @Test func clear() throws {
        var q = try queue(3)
        try q.setCurrent(1)
        let v = q.version
        q.clear()
        #expect(q.items.isEmpty)
        #expect(q.currentID == nil)
        #expect(q.version == v + 1)
        q.clear()
        #expect(q.version == v + 1)
        var fresh = PlayQueue()
        fresh.clear()
        #expect(fresh.version == 0)
    }

    @Test func setCurrent() throws {
        var q = try queue(2)
        let v = q.version
        try q.setCurrent(1)
        #expect(q.current?.id == 1)
        #expect(q.version == v + 1)
        try q.setCurrent(1)
        #expect(q.version == v + 1)
        #expect(throws: QueueError.unknownID(5)) { try q.setCurrent(5) }
        #expect(q.currentID == 1)
        try q.setCurrent(nil)
        #expect(q.currentID == nil)
        #expect(q.version == v + 2)
        try q.setCurrent(nil)
        #expect(q.version == v + 2)
    }

    @Test func versionBumpsOncePerChangeAndNeverOnNoOps() throws {
        var q = PlayQueue()
        var v = 0
        func expectBump(_ by: Int, _ comment: Comment) {
            #expect(q.version == v + by, comment)
            v = q.version
        }
        try q.add(songs(3))
        expectBump(1, "add")
        try q.add([])
        expectBump(0, "add nothing")
        try q.move(id: 0, to: 2)
        expectBump(1, "move")
        try q.move(id: 0, to: 2)
        expectBump(0, "move in place")
        try q.setCurrent(0)
        expectBump(1, "setCurrent")
        try q.setCurrent(0)
        expectBump(0, "setCurrent same")
        q.setOptions(QueueOptions(repeat: true), randomSeed: 1)
        expectBump(1, "options")
        q.setOptions(QueueOptions(repeat: true), randomSeed: 2)
        expectBump(0, "same options")
        q.setOptions(QueueOptions(repeat: true, random: true), randomSeed: 3)
        expectBump(1, "random on")
        try q.advance(from: nil, to: 0)
        expectBump(0, "advance to current")
        try q.advance(from: 0, to: 1)
        expectBump(1, "advance")
        q.setOptions(QueueOptions(consume: true), randomSeed: 0)
        expectBump(1, "consume")
        try q.advance(from: 1, to: 2)
        expectBump(1, "advance with consume: one bump for both changes")
        try q.remove(ids: [])
        expectBump(0, "remove nothing")
        try? q.remove(ids: [99])
        expectBump(0, "failed remove")
        try q.remove(ids: [0, 2])
        expectBump(1, "remove (current too)")
        #expect(q.items.isEmpty && q.currentID == nil)
        q.clear()
        expectBump(0, "clear empty")
    }

    @Test func optionsRoundTrip() {
        var q = PlayQueue()
        let all = QueueOptions(repeat: true, single: true, consume: true, random: true)
        q.setOptions(all, randomSeed: 0)
        #expect(q.options == all)
        #expect(q.version == 1)
    }
}

@Suite("PlayQueue: play order")
struct PlayQueueOrderTests {
    /// repeat × single over a three-item queue 0, 1, 2: next(after:), userNext(after:) and
    /// previous(before:) for the first, middle and last item. Written out, not derived.
    struct Row: Sendable, CustomStringConvertible {
        var `repeat`: Bool, single: Bool
        var next: [Int?], userNext: [Int?], previous: [Int?]
        var description: String { "repeat \(self.repeat) single \(single)" }
    }

    static let table: [Row] = [
        Row(repeat: false, single: false, next: [1, 2, nil], userNext: [1, 2, nil], previous: [nil, 0, 1]),
        Row(repeat: true, single: false, next: [1, 2, 0], userNext: [1, 2, 0], previous: [2, 0, 1]),
        Row(repeat: false, single: true, next: [nil, nil, nil], userNext: [1, 2, nil], previous: [nil, 0, 1]),
        Row(repeat: true, single: true, next: [0, 1, 2], userNext: [1, 2, 0], previous: [2, 0, 1]),
    ]

    @Test(arguments: table)
    func navigation(row: Row) throws {
        let q = try queue(3, QueueOptions(repeat: row.repeat, single: row.single))
        #expect([0, 1, 2].map { q.next(after: $0) } == row.next)
        #expect([0, 1, 2].map { q.userNext(after: $0) } == row.userNext)
        #expect([0, 1, 2].map { q.previous(before: $0) } == row.previous)
        #expect(q.next(after: 42) == nil)
        #expect(q.userNext(after: 42) == nil)
        #expect(q.previous(before: 42) == nil)
        #expect(q.first == 0)
    }

    @Test(arguments: [false, true])
    func singleItemWithRepeatWrapsToItself(random: Bool) throws {
        let q = try queue(1, QueueOptions(repeat: true, random: random))
        #expect(q.next(after: 0) == 0)
        #expect(q.userNext(after: 0) == 0)
        #expect(q.previous(before: 0) == 0)
    }

    @Test func orderFollowsMoves() throws {
        var q = try queue(3)
        try q.move(id: 2, to: 0)
        #expect(q.first == 2)
        #expect(q.next(after: 2) == 0)
        #expect(q.next(after: 1) == nil)
        #expect(q.playOrder == [2, 0, 1])
    }

    @Test func consumeRemovesTheFinishedItemOnAdvance() throws {
        var q = try queue(3, QueueOptions(consume: true))
        try q.advance(from: nil, to: 0)
        #expect(ids(q) == [0, 1, 2])
        #expect(q.currentID == 0)
        try q.advance(from: 0, to: 1)
        #expect(ids(q) == [1, 2])
        #expect(q.currentID == 1)
        #expect(q.next(after: 1) == 2)
        try q.advance(from: 1, to: 2)
        #expect(ids(q) == [2])
        #expect(q.next(after: 2) == nil)
    }

    /// An item that played to its end with nothing joined to it: consumed with `consume`, as in
    /// MPD (the queue's end, `single`), and current goes with it; kept without.
    @Test func finishConsumesTheLastItemOnlyWithConsume() throws {
        var q = try queue(2, QueueOptions(consume: true))
        try q.setCurrent(1)
        let version = q.version
        let consumed = q.finish(1)
        #expect(consumed)
        #expect(ids(q) == [0] && q.currentID == nil && q.version == version + 1)
        #expect(q.positionsChanged(since: version).isEmpty, "nothing after it moved")
        let unknown = q.finish(7)
        #expect(!unknown, "an unknown id changes nothing")
        var kept = try queue(2)
        try kept.setCurrent(1)
        let keptOne = kept.finish(1)
        #expect(!keptOne)
        #expect(ids(kept) == [0, 1] && kept.currentID == 1)
    }

    @Test func advanceWithoutConsumeKeepsItems() throws {
        var q = try queue(2)
        try q.advance(from: 0, to: 1)
        #expect(ids(q) == [0, 1])
        #expect(q.currentID == 1)
    }

    @Test func advanceEdgeCases() throws {
        var q = try queue(2, QueueOptions(repeat: true, single: true, consume: true))
        let before = q
        #expect(throws: QueueError.unknownID(9)) { try q.advance(from: 0, to: 9) }
        #expect(q == before)
        // single + repeat replays the item: it is not consumed out from under itself.
        try q.advance(from: 0, to: 0)
        #expect(ids(q) == [0, 1])
        #expect(q.currentID == 0)
        // A finished item the user already removed is simply ignored.
        try q.remove(ids: [0])
        try q.advance(from: 0, to: 1)
        #expect(ids(q) == [1])
        #expect(q.currentID == 1)
    }
}

@Suite("PlayQueue: random")
struct PlayQueueRandomTests {
    static let random = QueueOptions(random: true)

    @Test func orderIsAPermutationAndDeterministicForASeed() throws {
        let a = try queue(50, Self.random, seed: 42)
        let b = try queue(50, Self.random, seed: 42)
        let c = try queue(50, Self.random, seed: 43)
        #expect(a.playOrder.sorted() == Array(0..<50))
        #expect(a.playOrder == b.playOrder)
        #expect(a.playOrder != c.playOrder)
        #expect(a.playOrder != Array(0..<50))
    }

    /// Follows next(after:) from `first`: every item once, then (with repeat) back to the start.
    @Test(arguments: [1, 7, 100] as [UInt64])
    func everyItemOnceBeforeTheWrap(seed: UInt64) throws {
        let q = try queue(30, QueueOptions(repeat: true, random: true), seed: seed)
        var heard: [Int] = []
        var id = q.first
        while let current = id, heard.count < 31 {
            heard.append(current)
            id = q.next(after: current)
        }
        #expect(Set(heard.prefix(30)).count == 30)
        #expect(heard[30] == heard[0])
        #expect(q.previous(before: heard[0]) == heard[29])
    }

    @Test func turningRandomOnPutsTheCurrentItemFirst() throws {
        var q = try queue(20)
        try q.setCurrent(13)
        q.setOptions(Self.random, randomSeed: 5)
        #expect(q.playOrder.first == 13)
        #expect(q.first == 13)
        #expect(q.playOrder.sorted() == Array(0..<20))
    }

    @Test func orderIsStableAcrossMovesAndOtherOptions() throws {
        var q = try queue(10, Self.random, seed: 9)
        let order = q.playOrder
        try q.move(id: order[0], to: 9)
        try q.move(id: order[5], to: 0)
        q.setOptions(QueueOptions(repeat: true, random: true), randomSeed: 12345)
        #expect(q.playOrder == order)
    }

    @Test func addedItemsComeAfterTheCurrentOne() throws {
        var q = try queue(10, Self.random, seed: 3)
        let current = q.playOrder[4]
        try q.setCurrent(current)
        let before = q.playOrder
        let added = try q.add(songs(5)).map(\.id)
        let order = q.playOrder
        #expect(order.sorted() == Array(0..<15))
        // What was already heard (up to and including current) keeps its place.
        #expect(Array(order.prefix(5)) == Array(before.prefix(5)))
        // The old tail keeps its relative order; the new ids are somewhere in the tail.
        #expect(order.dropFirst(5).filter { !added.contains($0) } == Array(before.dropFirst(5)))
        #expect(Set(order.dropFirst(5)).isSuperset(of: added))
    }

    @Test func removedItemsLeaveTheOrder() throws {
        var q = try queue(10, Self.random, seed: 3)
        let before = q.playOrder
        try q.remove(ids: [before[0], before[9], 4])
        #expect(q.playOrder == before.filter { ![before[0], before[9], 4].contains($0) })
    }

    @Test func randomOffRestoresItemOrderAndOnReshuffles() throws {
        var q = try queue(10, Self.random, seed: 3)
        q.setOptions(QueueOptions(), randomSeed: 0)
        #expect(q.playOrder == Array(0..<10))
        q.setOptions(Self.random, randomSeed: 3)
        #expect(q.playOrder == (try queue(10, Self.random, seed: 3)).playOrder)
    }

    @Test func randomOnAnEmptyQueueThenAdd() throws {
        var q = PlayQueue()
        q.setOptions(Self.random, randomSeed: 1)
        #expect(q.playOrder.isEmpty)
        #expect(q.first == nil)
        try q.add(songs(8))
        #expect(q.playOrder.sorted() == Array(0..<8))
    }

    @Test func consumeInRandom() throws {
        var q = try queue(5, QueueOptions(consume: true, random: true), seed: 11)
        let order = q.playOrder
        try q.advance(from: nil, to: order[0])
        try q.advance(from: order[0], to: order[1])
        #expect(q.playOrder == Array(order.dropFirst()))
        #expect(q.next(after: order[1]) == order[2])
    }

    @Test func prngIsUniformEnoughAndUnbiasedInRange() {
        var rng = SplitMix64(seed: 0)
        var counts = [Int](repeating: 0, count: 6)
        for _ in 0..<60_000 { counts[rng.below(6)] += 1 }
        #expect(counts.allSatisfy { (9_000...11_000).contains($0) }, "\(counts)")
        // Reference value for SplitMix64 with seed 0 (from the published C implementation).
        var reference = SplitMix64(seed: 0)
        #expect(reference.next() == 0xE220_A839_7B1D_CDAF)
    }
}

@Suite("PlayQueue: Codable and invariants")
struct PlayQueueCodableTests {
    @Test(arguments: [false, true])
    func roundTrip(random: Bool) throws {
        var q = try queue(6, QueueOptions(repeat: true, consume: true, random: random), seed: 77)
        try q.setCurrent(3)
        try q.remove(ids: [1])
        try q.add([(URL(string: "https://radio.example/stream?x=1")!, "Radio, live")], at: 2)
        let data = try JSONEncoder().encode(q)
        var decoded = try JSONDecoder().decode(PlayQueue.self, from: data)
        #expect(decoded == q)
        // The PRNG state and id counter came along: both copies go on identically.
        var original = q
        let addedToDecoded = try decoded.add(songs(4))
        let addedToOriginal = try original.add(songs(4))
        #expect(addedToDecoded == addedToOriginal)
        #expect(decoded == original)
    }

    @Test func damagedStateIsRejected() throws {
        let q = try queue(3, QueueOptions(random: true))
        let json = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(q)) as? [String: Any])
        func decodes(_ change: (inout [String: Any]) -> Void) throws -> Bool {
            var copy = json
            change(&copy)
            let data = try JSONSerialization.data(withJSONObject: copy)
            return (try? JSONDecoder().decode(PlayQueue.self, from: data)) != nil
        }
        #expect(try decodes { _ in })
        #expect(try !decodes { $0["currentID"] = 99 })
        #expect(try !decodes { $0["shuffleOrder"] = [0, 1] })
        #expect(try !decodes { $0["shuffleOrder"] = [0, 1, 1] })
        #expect(try !decodes { $0["nextID"] = 1 })
        #expect(try !decodes { $0["version"] = -1 })
        #expect(try !decodes { $0["nextID"] = Int.max })
    }

    /// 2,000 random operations, valid and invalid, from a seeded generator; the invariants are
    /// checked after each one.
    @Test func randomOperationsKeepInvariants() throws {
        var gen = SplitMix64(seed: 2024)
        var q = PlayQueue()
        var everIssued = Set<Int>()
        var lastVersion = q.version

        for step in 0..<2_000 {
            // Mostly ids that exist, sometimes ones that never did or were removed.
            func someID() -> Int {
                if !q.items.isEmpty, gen.below(5) != 0 { return q.items[gen.below(q.items.count)].id }
                return gen.below(max(everIssued.count, 1) + 3) - 1
            }
            let before = q
            switch gen.below(11) {
            case 0, 1:
                let count = gen.below(4)
                let added = try? q.add(songs(count), at: gen.below(3) == 0 ? nil : gen.below(q.items.count + 2) - 1)
                for item in added ?? [] {
                    #expect(!everIssued.contains(item.id), "id \(item.id) reused at step \(step)")
                    everIssued.insert(item.id)
                }
            case 2: try? q.remove(ids: (0..<gen.below(3)).map { _ in someID() })
            case 3: try? q.move(id: someID(), to: gen.below(q.items.count + 2) - 1)
            case 4: if gen.below(20) == 0 { q.clear() }
            case 5:
                q.setOptions(
                    QueueOptions(
                        repeat: gen.below(2) == 0, single: gen.below(2) == 0,
                        consume: gen.below(2) == 0, random: gen.below(2) == 0),
                    randomSeed: gen.next())
            case 6: try? q.setCurrent(gen.below(4) == 0 ? nil : someID())
            case 7: try? q.advance(from: q.currentID, to: q.currentID.flatMap { q.next(after: $0) } ?? someID())
            case 8: try? q.advance(from: gen.below(2) == 0 ? nil : someID(), to: someID())
            default:
                // The readers must answer for any id, known or not.
                let id = someID()
                for answer in [q.next(after: id), q.userNext(after: id), q.previous(before: id), q.first] {
                    if let answer { #expect(q.item(id: answer) != nil, "step \(step)") }
                }
            }

            let itemIDs = ids(q)
            #expect(Set(itemIDs).count == itemIDs.count, "duplicate ids at step \(step)")
            if let current = q.currentID { #expect(itemIDs.contains(current), "dangling current at step \(step)") }
            #expect(q.playOrder.sorted() == itemIDs.sorted(), "play order not a permutation at step \(step)")
            if !q.options.random { #expect(q.playOrder == itemIDs) }
            #expect(q.version >= lastVersion)
            #expect(q.version == lastVersion + (q == before ? 0 : 1), "version at step \(step)")
            lastVersion = q.version
        }
        // The run is worth something only if it built up a queue along the way.
        #expect(everIssued.count > 100)
        let decoded = try JSONDecoder().decode(PlayQueue.self, from: JSONEncoder().encode(q))
        #expect(decoded == q)
    }
}

/// The per-position change stamps behind MPD's `plchanges`, and the permanent shuffle.
@Suite("Play queue change stamps and shuffle")
struct PlayQueueChangeTests {
    private func urls(_ names: String...) -> [(url: URL, title: String?)] {
        names.map { (URL(fileURLWithPath: "/m/\($0).flac"), nil) }
    }

    @Test func editsStampThePositionsTheyChange() throws {
        var queue = PlayQueue()
        try queue.add(urls("a", "b", "c", "d"))
        let afterAdd = queue.version
        #expect(queue.positionsChanged(since: afterAdd).isEmpty)
        #expect(queue.positionsChanged(since: afterAdd - 1) == [0, 1, 2, 3])

        try queue.add(urls("x"), at: 2)
        #expect(queue.positionsChanged(since: afterAdd) == [2, 3, 4], "the new item and the ones it pushed along")

        let beforeMove = queue.version
        try queue.move(id: queue.items[4].id, to: 1)
        #expect(queue.positionsChanged(since: beforeMove) == [1, 2, 3, 4])

        let beforeRemove = queue.version
        try queue.remove(ids: [queue.items[3].id])
        #expect(queue.positionsChanged(since: beforeRemove) == [3])

        let beforeClear = queue.version
        queue.clear()
        #expect(queue.positionsChanged(since: beforeClear).isEmpty)
        #expect(queue.positionVersions.isEmpty)
    }

    @Test func consumingAnItemStampsThoseAfterIt() throws {
        var queue = PlayQueue()
        let items = try queue.add(urls("a", "b", "c"))
        queue.setOptions(QueueOptions(consume: true), randomSeed: 1)
        try queue.setCurrent(items[0].id)
        let before = queue.version
        try queue.advance(from: items[0].id, to: items[1].id)
        #expect(queue.items.map(\.id) == [items[1].id, items[2].id])
        #expect(queue.positionsChanged(since: before) == [0, 1])
    }

    @Test func shuffleKeepsEveryItemAndPutsTheCurrentOneFirst() throws {
        var queue = PlayQueue()
        let items = try queue.add(urls("a", "b", "c", "d", "e", "f", "g", "h"))
        try queue.setCurrent(items[5].id)
        let before = queue.version
        try queue.shuffle(seed: 42)
        #expect(queue.items[0].id == items[5].id, "the item being heard moves to the front")
        #expect(Set(queue.items.map(\.id)) == Set(items.map(\.id)))
        #expect(queue.version == before + 1)
        #expect(queue.positionsChanged(since: before) == Array(0..<8))

        var other = PlayQueue()
        try other.add(urls("a", "b", "c", "d", "e", "f", "g", "h"))
        let order = other.items.map(\.id)
        try other.shuffle(2..<6, seed: 7)
        #expect(Array(other.items.map(\.id)[0..<2]) == Array(order[0..<2]))
        #expect(Array(other.items.map(\.id)[6...]) == Array(order[6...]))
        #expect(Set(other.items.map(\.id)[2..<6]) == Set(order[2..<6]))
        #expect(throws: QueueError.positionOutOfRange(9, count: 8)) { try other.shuffle(3..<9, seed: 1) }
    }

    @Test func stampsSurviveTheStateFileAndOldFilesGetThem() throws {
        var queue = PlayQueue()
        try queue.add(urls("a", "b"))
        try queue.add(urls("c"), at: 0)
        let decoded = try JSONDecoder().decode(PlayQueue.self, from: JSONEncoder().encode(queue))
        #expect(decoded == queue)

        var object = try #require(JSONSerialization.jsonObject(with: JSONEncoder().encode(queue)) as? [String: Any])
        object["positionVersions"] = nil
        var options = try #require(object["options"] as? [String: Any])
        options["oneshot"] = nil
        object["options"] = options
        let old = try JSONDecoder().decode(PlayQueue.self, from: JSONSerialization.data(withJSONObject: object))
        #expect(old.positionVersions == Array(repeating: queue.version, count: 3))
        #expect(old.options.oneshot == false)
    }

    /// A cast sets the queue aside and gives it back: the same items, ids, current item and
    /// options, with a version past both and no id given twice.
    @Test func aQueueBroughtBackKeepsItsItemsAndMovesVersionsAndIDsOn() throws {
        var house = PlayQueue()
        try house.add(urls("a", "b", "c"))
        try house.setCurrent(1)
        house.setOptions(QueueOptions(repeat: true), randomSeed: 0)
        let aside = house
        var cast = house
        cast.clear()
        let castItems = try cast.add(urls("cast1", "cast2", "cast3", "cast4"))
        cast.bringBack(aside)
        #expect(cast.items == aside.items)
        #expect(cast.currentID == 1)
        #expect(cast.options == aside.options)
        #expect(cast.version > max(aside.version, castItems.count))
        #expect(cast.positionVersions == Array(repeating: cast.version, count: 3))
        let added = try cast.add(urls("d"))
        #expect(added[0].id > castItems.map(\.id).max()!, "ids the cast used are not given again")
    }
}
