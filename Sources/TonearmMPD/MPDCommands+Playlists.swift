import Foundation
import NIOCore
import TonearmCore
import TonearmFrontEnd
import TonearmLibrary
import TonearmPlayer

/// Stored playlists, as MPD 0.23 answers for them: those of the playlist directory, which
/// clients write (`save`, `playlistadd`, …), and the music directory's own .m3u files, which they
/// only read. Every change is announced as `idle stored_playlist`.
extension MPDCommands {
    static let playlistCommands: [MPDCommand] = [
        MPDCommand(
            "listplaylists", .read, 0...0,
            .later { call throws(MPDError) in
                let library = call.environment.library
                return try await library.perform { () throws(MPDError) in
                    var r = MPDResponse()
                    writeStoredPlaylists(library, into: &r)
                    return r.buffer
                }
            }),
        MPDCommand(
            "listplaylistinfo", .read, 1...1,
            .later { call throws(MPDError) in
                try await playlistContents(call, withTags: true)
            }),
        MPDCommand(
            "listplaylist", .read, 1...1,
            .later { call throws(MPDError) in
                try await playlistContents(call, withTags: false)
            }),
        MPDCommand(
            "load", .control, 1...3,
            .later { call throws(MPDError) in
                let library = call.environment.library
                let range = call.count >= 2 ? try call.range(1) : nil
                let (entries, known) = try await library.perform { () throws(MPDError) in
                    var entries = try library.playlistEntries(call[0], for: call.peer)
                    if let range {
                        // A range beyond the playlist is cut to it, as MPD does.
                        entries = Array(entries[min(range.lowerBound, entries.count)..<min(range.upperBound, entries.count)])
                    }
                    return (entries, library.knownTags(entries.map(\.url)))
                }
                let position = call.count == 3 ? try call.unsigned(2, max: call.player.queue.items.count) : nil
                do throws(PlayerError) { _ = try call.player.add(entries, at: position, known: known) } catch { try settle(error) }
                return nil
            }),
        MPDCommand(
            "save", .control, 1...1,
            .later { call throws(MPDError) in
                let library = call.environment.library
                let uris = call.player.queue.items.map { library.uri(for: $0.url) }
                try await change(call) { store throws(PlaylistStore.Failure) in try store.create(call[0], entries: uris) }
                return nil
            }),
        MPDCommand(
            "rm", .control, 1...1,
            .later { call throws(MPDError) in
                try await change(call) { store throws(PlaylistStore.Failure) in try store.remove(call[0]) }
                return nil
            }),
        MPDCommand(
            "rename", .control, 2...2,
            .later { call throws(MPDError) in
                try await change(call, also: call[1]) { store throws(PlaylistStore.Failure) in try store.rename(call[0], to: call[1]) }
                return nil
            }),
        MPDCommand(
            "playlistclear", .control, 1...1,
            .later { call throws(MPDError) in
                try await change(call) { store throws(PlaylistStore.Failure) in
                    try store.edit(call[0]) { entries throws(PlaylistStore.Failure) in entries.removeAll() }
                }
                return nil
            }),
        MPDCommand(
            "playlistadd", .control, 2...3,
            .later { call throws(MPDError) in
                let library = call.environment.library
                guard PlaylistStore.isValid(call[0]) else { throw .argument(PlaylistStore.Failure.badName.description) }
                let position = call.count == 3 ? try call.unsigned(2) : nil
                let songs = try await library.perform { () throws(MPDError) in try library.songsToAdd(call[1]) }
                try await insert(songs.urls.map { library.uri(for: $0) }, into: call, at: position)
                return nil
            }),
        MPDCommand(
            "searchaddpl", .control, 2...Int(Int32.max),
            .later { call throws(MPDError) in
                guard PlaylistStore.isValid(call[0]) else { throw .argument(PlaylistStore.Failure.badName.description) }
                let uris = try await matchingSongs(call, from: 1, fold: true)?.0.map(\.uri) ?? []
                try await insert(uris, into: call, at: nil)
                return nil
            }),
        MPDCommand(
            "playlistdelete", .control, 2...2,
            .later { call throws(MPDError) in
                let range = try call.range(1)
                try await change(call) { store throws(PlaylistStore.Failure) in
                    try store.edit(call[0]) { entries throws(PlaylistStore.Failure) in
                        guard range.lowerBound < entries.count else { throw .badIndex }
                        entries.removeSubrange(range.lowerBound..<min(range.upperBound, entries.count))
                    }
                }
                return nil
            }),
        MPDCommand(
            "playlistmove", .control, 3...3,
            .later { call throws(MPDError) in
                let from = try call.unsigned(1)
                let to = try call.unsigned(2)
                try await change(call) { store throws(PlaylistStore.Failure) in
                    try store.edit(call[0]) { entries throws(PlaylistStore.Failure) in
                        guard from < entries.count, to < entries.count else { throw .badRange }
                        entries.insert(entries.remove(at: from), at: to)
                    }
                }
                return nil
            }),
    ]

    /// A change of the stored playlist `call[0]` (and `also`, a rename's new name) on the
    /// store's thread, in MPD's words when it fails, announced when it is done.
    private static func change(
        _ call: MPDCall, also other: String? = nil,
        _ body: @escaping @Sendable (PlaylistStore) throws(PlaylistStore.Failure) -> Void
    ) async throws(MPDError) {
        let environment = call.environment
        let library = environment.library
        try await library.perform { () throws(MPDError) in
            let store = try library.writableStore(for: call[0])
            if let other { _ = try library.writableStore(for: other) }
            do throws(PlaylistStore.Failure) { try body(store) } catch {
                // MPD words a rename's clash differently from `save`'s.
                if other != nil, error == .exists { throw MPDError(.exist, "Playlist exists already") }
                throw MPDLibrary.failure(error)
            }
        }
        environment.hub.post(.storedPlaylist)
    }

    /// `playlistadd`/`searchaddpl`: entries inserted at `position` (nil: the end), the playlist
    /// made if it is not there yet.
    private static func insert(_ uris: [String], into call: MPDCall, at position: Int?) async throws(MPDError) {
        try await change(call) { store throws(PlaylistStore.Failure) in
            try store.edit(call[0], creating: true) { entries throws(PlaylistStore.Failure) in
                guard let position else {
                    entries += uris
                    return
                }
                guard position <= entries.count else { throw .badPosition }
                entries.insert(contentsOf: uris, at: position)
            }
        }
    }

    /// `playlist:` and `Last-Modified:` of each stored playlist (the library's thread).
    static func writeStoredPlaylists(_ library: MPDLibrary, into r: inout MPDResponse) {
        for playlist in library.playlists() {
            r.add("playlist", playlist.name)
            r.add("Last-Modified", MPDEnvironment.timestamp(playlist.modified))
        }
    }

    /// `listplaylist`/`listplaylistinfo`: a stored playlist's entries as stored (with the
    /// songs' tags: the database's, or the file's), or a playlist file's.
    private static func playlistContents(_ call: MPDCall, withTags: Bool) async throws(MPDError) -> ByteBuffer? {
        let environment = call.environment
        let library = environment.library
        return try await library.perform { () throws(MPDError) in
            var r = MPDResponse()
            let entries: [(uri: String, url: URL?)]
            if let stored = try library.storedEntries(call[0]) {
                entries = stored.map { uri in (uri, try? library.url(forURI: uri)) }
            } else {
                entries = try library.playlistEntries(call[0], for: call.peer).map { (library.uri(for: $0.url), $0.url) }
            }
            let songs = withTags ? library.databaseSongs(entries.map(\.uri)) : Array(repeating: nil, count: entries.count)
            for (entry, song) in zip(entries, songs) {
                var info = stat()
                if let song {
                    environment.writeDatabaseSong(song, shown: call.tags, into: &r)
                } else if withTags, let url = entry.url, url.isFileURL, library.sources.refusal(url) == nil, stat(url.path, &info) == 0 {
                    environment.writeLibrarySong(uri: entry.uri, url: url, modified: Int(info.st_mtim.tv_sec), shown: call.tags, into: &r)
                } else {
                    r.add("file", entry.uri)
                }
            }
            return r.buffer
        }
    }
}
