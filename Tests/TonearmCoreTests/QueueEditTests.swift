import Foundation
import Testing
import TonearmCore

/// `QueueEdit`: every way the queue changes, as a value the state journal records. Replaying the
/// recorded edits onto a copy taken before them (through JSON, as the journal does) must give
/// the very queue the edits gave live.
@Suite("QueueEdit: replay")
struct QueueEditTests {
    private static func entry(_ name: String, title: String? = nil) -> QueueEdit.Entry {
        QueueEdit.Entry(url: URL(fileURLWithPath: "/music/\(name).flac"), title: title)
    }

    /// One row per case (`name` names each, so a new case does not compile until it has a
    /// name, and this table fails until it has a row): a queue of six items (ids 0-5, current 2,
    /// consume and random on) and an edit that changes it.
    static let rows: [(String, QueueEdit)] = [
        ("add", .add(entries: [entry("x", title: "X"), entry("y")], at: 1)),
        ("remove", .remove(ids: [0, 4])),
        ("move", .move(id: 5, to: 0)),
        ("shuffle", .shuffle(range: 1..<5, seed: 0xDEAD_BEEF_F00D_CAFE)),
        ("clear", .clear),
        (
            "setOptions",
            .setOptions(
                options: QueueOptions(repeat: true, single: true, consume: false, random: false, oneshot: true),
                randomSeed: UInt64.max)
        ),
        ("setCurrent", .setCurrent(id: 4)),
        ("advance", .advance(from: 2, to: 3)),
        ("finish", .finish(id: 2)),
        ("bringBack", .bringBack(queue: setAside)),
    ]

    /// A queue set aside by a cast: two items of its own, the second current.
    private static let setAside: PlayQueue = {
        var queue = PlayQueue()
        _ = try? queue.add([(URL(fileURLWithPath: "/music/a.flac"), "A"), (URL(fileURLWithPath: "/music/b.flac"), nil)])
        try? queue.setCurrent(1)
        return queue
    }()

    private static func name(_ edit: QueueEdit) -> String {
        switch edit {
        case .add: "add"
        case .remove: "remove"
        case .move: "move"
        case .shuffle: "shuffle"
        case .clear: "clear"
        case .setOptions: "setOptions"
        case .setCurrent: "setCurrent"
        case .advance: "advance"
        case .finish: "finish"
        case .bringBack: "bringBack"
        }
    }

    private static func startingQueue() throws -> PlayQueue {
        var queue = PlayQueue()
        try queue.add((0..<6).map { (URL(fileURLWithPath: "/music/\($0).flac"), nil) })
        queue.setOptions(QueueOptions(consume: true, random: true), randomSeed: 7)
        try queue.setCurrent(2)
        return queue
    }

    private static func throughJSON<T: Codable>(_ value: T) throws -> T {
        try JSONDecoder().decode(T.self, from: JSONEncoder().encode(value))
    }

    @Test func everyCaseHasARow() {
        #expect(Self.rows.map(\.0) == Self.rows.map { Self.name($0.1) }, "each row is named after its case")
        #expect(Set(Self.rows.map(\.0)).count == 10, "one row per case of QueueEdit")
    }

    @Test(arguments: rows.map(\.0))
    func eachEditReplaysExactly(_ name: String) throws {
        let edit = try #require(Self.rows.first { $0.0 == name }?.1)
        var live = try Self.startingQueue()
        let saved = try Self.throughJSON(live)
        let before = live
        try live.apply(edit)
        #expect(live != before, "the row's edit changes the queue")
        var replayed = saved
        try replayed.apply(try Self.throughJSON(edit))
        #expect(replayed == live)
    }

    /// All the rows in a row, as a journal holds them: the same queue, down to versions,
    /// position stamps, ids still to give and the shuffle.
    @Test func aSequenceReplaysExactly() throws {
        var live = try Self.startingQueue()
        let saved = try Self.throughJSON(live)
        var journal: [QueueEdit] = []
        for (_, edit) in Self.rows where Self.name(edit) != "clear" {
            let before = live.version
            do throws(QueueError) { try live.apply(edit) } catch { continue }  // an edit an earlier one made moot
            if live.version != before { journal.append(edit) }
        }
        try live.apply(.add(entries: [Self.entry("z")], at: nil))
        journal.append(.add(entries: [Self.entry("z")], at: nil))
        var replayed = saved
        for edit in journal { try replayed.apply(try Self.throughJSON(edit)) }
        #expect(replayed == live)
        #expect(replayed.items.last?.id == 8, "ids go on where they stood")
    }

    @Test func anEditThatCannotApplyFailsAsItsMethodDoes() throws {
        var queue = try Self.startingQueue()
        #expect(throws: QueueError.unknownID(99)) { try queue.apply(.move(id: 99, to: 0)) }
        #expect(throws: QueueError.positionOutOfRange(7, count: 6)) { try queue.apply(.add(entries: [Self.entry("x")], at: 7)) }
    }
}
