import Foundation
import NIOCore
import TonearmCore
import TonearmFrontEnd
import TonearmPlayer

/// The queue (MPD's "current playlist"): song ids are Tonearm's queue item ids, the playlist
/// version is the queue's version.
extension MPDCommands {
    static let queueCommands: [MPDCommand] = [
        MPDCommand(
            "add", .control, 1...2,
            .later { call throws(MPDError) in
                let position = try insertPosition(call, argument: 1)
                let songs = try await call.environment.library.perform { () throws(MPDError) in
                    try call.environment.library.songsToAdd(call[0])
                }
                do throws(PlayerError) {
                    _ = try call.player.add(songs.urls.map { ($0, nil) }, at: position, known: songs.known)
                } catch {
                    try settle(error)
                }
                return nil
            }, batch: addBatch(ids: false)),
        MPDCommand(
            "addid", .control, 1...2,
            .later { call throws(MPDError) in
                let position = try insertPosition(call, argument: 1)
                let songs = try await call.environment.library.perform { () throws(MPDError) in
                    do throws(MPDError) { return try call.environment.library.songsToAdd(call[0]) } catch { throw noSuchSong(error) }
                }
                guard songs.urls.count == 1, let url = songs.urls.first else { throw MPDError(.noExist, "No such song") }
                let added: [QueueItem]
                do throws(PlayerError) { added = try call.player.add([(url, nil)], at: position, known: songs.known).items } catch {
                    try settle(error)
                    return nil
                }
                return added.first.map(idLine)
            }, batch: addBatch(ids: true)),
        MPDCommand(
            "clear", .control, 0...0,
            .now { call, _ throws(MPDError) in
                do throws(PlayerError) { _ = try call.player.clear() } catch { try settle(error) }
            }),
        MPDCommand(
            "delete", .control, 1...1,
            .now { call, _ throws(MPDError) in
                let queue = call.player.queue
                let ids = queue.items[try call.clippedRange(0, count: queue.items.count)].map(\.id)
                guard !ids.isEmpty else { return }
                do throws(PlayerError) { _ = try call.player.remove(ids: ids) } catch { try settle(error) }
            }),
        MPDCommand(
            "deleteid", .control, 1...1,
            .now { call, _ throws(MPDError) in
                let id = try call.unsigned(0)
                guard call.player.queue.item(id: id) != nil else { throw MPDError(.noExist, "No such song") }
                do throws(PlayerError) { _ = try call.player.remove(ids: [id]) } catch { try settle(error) }
            }),
        MPDCommand(
            "move", .control, 2...2,
            .now { call, _ throws(MPDError) in
                let range = try call.range(0)
                guard range.upperBound != Int(Int32.max) else { throw .argument("Open-ended range not supported") }
                let queue = call.player.queue
                guard range.upperBound <= queue.items.count else { throw .argument("Bad song index") }
                let ids = queue.items[range].map(\.id)
                let target = try call.unsigned(1, max: queue.items.count - ids.count)
                try moveBlock(ids, from: range.lowerBound, to: target, call.player)
            }),
        MPDCommand(
            "moveid", .control, 2...2,
            .now { call, _ throws(MPDError) in
                let id = try call.unsigned(0)
                let queue = call.player.queue
                guard let from = queue.position(of: id) else { throw MPDError(.noExist, "No such song") }
                let target = try call.unsigned(1, max: queue.items.count - 1)
                try moveBlock([id], from: from, to: target, call.player)
            }),
        MPDCommand(
            "playlistinfo", .read, 0...1,
            .listing { call, r throws(MPDError) in
                let queue = call.player.queue
                let range = call.count == 1 ? try call.clippedRange(0, count: queue.items.count) : 0..<queue.items.count
                writeSongs(range, call, into: &r)
            }),
        MPDCommand(
            "playlist", .read, 0...0,
            .listing { call, r in
                // Deprecated in MPD: "POS:file: URI" lines.
                let queue = call.player.queue
                for (position, item) in queue.items.enumerated() {
                    r.add("\(position):file", call.environment.library.uri(for: item.url))
                }
            }),
        MPDCommand(
            "playlistid", .read, 0...1,
            .listing { call, r throws(MPDError) in
                let queue = call.player.queue
                guard call.count == 1 else {
                    writeSongs(0..<queue.items.count, call, into: &r)
                    return
                }
                let id = try call.unsigned(0)
                guard let position = queue.position(of: id) else { throw MPDError(.noExist, "No such song") }
                writeSongs(position..<(position + 1), call, into: &r)
            }),
        MPDCommand(
            "plchanges", .read, 1...2,
            .listing { call, r throws(MPDError) in
                let queue = call.player.queue
                let window = call.count == 2 ? try call.range(1) : 0..<Int(Int32.max)
                let status = call.player.status
                for position in try changedPositions(call, queue) where window.contains(position) {
                    let item = queue.items[position]
                    call.environment.writeSong(
                        item, position: position, media: item.id == status.current ? status.media : nil, shown: call.tags, into: &r)
                }
            }),
        MPDCommand(
            "plchangesposid", .read, 1...2,
            .listing { call, r throws(MPDError) in
                let queue = call.player.queue
                let window = call.count == 2 ? try call.range(1) : 0..<Int(Int32.max)
                for position in try changedPositions(call, queue) where window.contains(position) {
                    r.add("cpos", position)
                    r.add("Id", queue.items[position].id)
                }
            }),
        MPDCommand(
            "shuffle", .control, 0...1,
            .now { call, _ throws(MPDError) in
                let count = call.player.queue.items.count
                let range = call.count == 1 ? try call.clippedRange(0, count: count) : nil
                do throws(PlayerError) { _ = try call.player.shuffle(range) } catch { try settle(error) }
            }),
    ]

    /// The positions `plchanges VERSION` lists: those changed since the client's version, or all
    /// of them for a version the queue never had (a client that saw another run of the daemon).
    private static func changedPositions(_ call: MPDCall, _ queue: PlayQueue) throws(MPDError) -> [Int] {
        let text = call[0]
        guard let version = Int(text), version >= 0 else { throw .argument("Integer expected: \(text)") }
        guard version <= queue.version else { return Array(queue.items.indices) }
        return queue.positionsChanged(since: version)
    }

    /// Songs at `range` of the queue, as `playlistinfo` shows them.
    private static func writeSongs(_ range: Range<Int>, _ call: MPDCall, into r: inout MPDResponse) {
        let queue = call.player.queue
        let status = call.player.status
        for position in range {
            let item = queue.items[position]
            call.environment.writeSong(
                item, position: position, media: item.id == status.current ? status.media : nil, shown: call.tags, into: &r)
        }
    }

    /// Where `add`/`addid` insert: an absolute position, or `+N`/`-N` relative to the current
    /// song (`+0` right after it, `-0` right before it); nil: the end.
    private static func insertPosition(_ call: MPDCall, argument index: Int) throws(MPDError) -> Int? {
        guard index < call.count else { return nil }
        let text = call[index]
        let queue = call.player.queue
        if text.hasPrefix("+") || text.hasPrefix("-") {
            guard let offset = Int(text.dropFirst()), offset >= 0 else { throw .argument("Integer expected: \(text)") }
            guard let current = queue.currentID, let at = queue.position(of: current) else {
                throw MPDError(.playerSync, "No current song")
            }
            let position = text.hasPrefix("+") ? at + 1 + offset : at - offset
            guard position >= 0, position <= queue.items.count else { throw .argument("Bad song index") }
            return position
        }
        return try call.unsigned(index, max: queue.items.count)
    }

    /// Moves the block `ids` (consecutive, starting at `from`) so that its first item lands at `to`.
    private static func moveBlock(_ ids: [Int], from: Int, to: Int, _ player: Player) throws(MPDError) {
        do throws(PlayerError) {
            if to <= from {
                for (offset, id) in ids.enumerated() { _ = try player.move(id: id, to: to + offset) }
            } else {
                for (offset, id) in ids.enumerated().reversed() { _ = try player.move(id: id, to: to + offset) }
            }
        } catch {
            try settle(error)
        }
    }
}
