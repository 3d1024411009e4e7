import Foundation

/// One change to a `PlayQueue`, as a value: what the state journal records for each acknowledged
/// change, and replays onto the last snapshot after a crash. Every way the queue changes has a
/// case, with every input it needs (the seeds too), so replaying the edits in order gives the
/// very queue they gave the first time: items, ids, versions and shuffle order.
package enum QueueEdit: Sendable, Equatable, Codable {
    package struct Entry: Sendable, Equatable, Codable {
        package var url: URL
        package var title: String?

        package init(url: URL, title: String?) {
            self.url = url
            self.title = title
        }
    }

    case add(entries: [Entry], at: Int?)
    case remove(ids: [Int])
    case move(id: Int, to: Int)
    case shuffle(range: Range<Int>?, seed: UInt64)
    case clear
    case setOptions(options: QueueOptions, randomSeed: UInt64)
    case setCurrent(id: Int?)
    case advance(from: Int?, to: Int)
    case finish(id: Int)
    /// A queue set aside comes back whole (`PlayQueue.bringBack`).
    case bringBack(queue: PlayQueue)
}

extension PlayQueue {
    /// Makes `edit`; returns the items it added (none for every other edit). Fails as the
    /// method it names does.
    @discardableResult
    package mutating func apply(_ edit: QueueEdit) throws(QueueError) -> [QueueItem] {
        switch edit {
        case .add(let entries, let at):
            return try add(entries.map { ($0.url, $0.title) }, at: at)
        case .remove(let ids):
            try remove(ids: ids)
        case .move(let id, let to):
            try move(id: id, to: to)
        case .shuffle(let range, let seed):
            try shuffle(range, seed: seed)
        case .clear:
            clear()
        case .setOptions(let options, let randomSeed):
            setOptions(options, randomSeed: randomSeed)
        case .setCurrent(let id):
            try setCurrent(id)
        case .advance(let from, let to):
            try advance(from: from, to: to)
        case .finish(let id):
            _ = finish(id)
        case .bringBack(let queue):
            bringBack(queue)
        }
        return []
    }
}
