import Foundation
import NIOCore
import TonearmCore
import TonearmMedia
import TonearmPlayer

/// `add`s and `addid`s in a row in a command list, run as one (`MPDCommand.Batch`): clients
/// add a whole album or library that way, a command per song.
extension MPDCommands {
    /// `add URI` (no position) or, with `ids`, `addid URI` (each URI one song, answered with its id).
    static func addBatch(ids: Bool) -> MPDCommand.Batch {
        MPDCommand.Batch(joins: { $0.arguments.count == 1 }) { calls in
            let environment = calls[0].environment
            let player = calls[0].player
            let found: MPDLibrary.SongsToAdd
            do throws(MPDError) {
                found = try await environment.library.perform { environment.library.songsToAdd(calls.map { $0[0] }) }
            } catch {
                return ([], error)
            }
            let check = ids ? found.songs.firstIndex { $0.count != 1 } : nil
            let songs = check.map { Array(found.songs[..<$0]) } ?? found.songs
            let failure = check == nil ? found.failure.map { ids ? noSuchSong($0) : $0 } : MPDError(.noExist, "No such song")
            // One queue edit for all; if the queue refuses it, one per call tells which one.
            if let added = try? player.add(songs.joined().map { ($0, nil) }, known: found.known).items {
                return (ids ? added.map(idLine) : Array(repeating: nil, count: songs.count), failure)
            }
            var answers: [ByteBuffer?] = []
            for urls in songs {
                let known = Dictionary(urls.compactMap { url in found.known[url].map { (url, $0) } }) { first, _ in first }
                do throws(PlayerError) {
                    let added = try player.add(urls.map { ($0, nil) }, known: known).items
                    answers.append(ids ? added.first.map(idLine) : nil)
                } catch {
                    do throws(MPDError) { try settle(error) } catch { return (answers, error) }
                    answers.append(nil)
                }
            }
            return (answers, failure)
        }
    }

    /// `addid` names one song: what does not exist is "No such song", as MPD says.
    static func noSuchSong(_ error: MPDError) -> MPDError {
        error.code == .noExist ? MPDError(.noExist, "No such song") : error
    }

    static func idLine(_ item: QueueItem) -> ByteBuffer {
        var r = MPDResponse()
        r.add("Id", item.id)
        return r.buffer
    }
}
