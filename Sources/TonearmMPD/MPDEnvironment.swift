import Foundation
import TonearmCore
import TonearmFrontEnd
import TonearmLibrary
import TonearmMedia
import TonearmPlayer
import TonearmSync

/// What every MPD connection shares: the player, the library, the long replies' thread, the password, and the counters
/// `stats` reports.
final class MPDEnvironment: Sendable {
    let player: Player
    let library: MPDLibrary
    let longReplies: LongReplies
    let password: String?
    let outputName: String
    /// Tells every connection what changed (idle).
    let hub = MPDIdleHub()
    /// `status`'s lines, encoded once per change of the player's status or queue.
    let statusLines = EncodedOnce<StatusSource>()
    /// The library queries' replies, kept until the database changes.
    let replies = MPDReplyCache()
    /// What `status` shows: the player's status and what it says of the queue. Not the queue
    /// itself: kept here, a copy would make the next edit of a long queue copy every item.
    struct StatusSource: Equatable, Sendable {
        var status: PlayerStatus
        var queueVersion: Int
        var options: QueueOptions
        var currentID: Int?
        /// The library scan running, if any (`updating_db`).
        var updatingJob: Int?
        /// Why the music directory is offline (the library keeps its entries meanwhile).
        var libraryOffline: String?
    }
    private let updateJobs = Locked<Int>(0)
    private let started = ContinuousClock.now
    /// Seconds spent playing, for `stats` (`playtime`): the total so far and, while playing,
    /// since when. Updated from the player's transitions.
    private let playing = Locked<(total: Duration, since: ContinuousClock.Instant?)>((.zero, nil))

    init(player: Player, library: MPDLibrary, longReplies: LongReplies, password: String?, outputName: String) {
        self.player = player
        self.library = library
        self.longReplies = longReplies
        self.password = password
        self.outputName = outputName
    }

    /// `update`: there is no database to update, but the job is numbered and announced as MPD does.
    func nextUpdateJob() -> Int {
        let job = updateJobs.withLock { job in
            job += 1
            return job
        }
        hub.post(.update)
        return job
    }

    var uptime: Int { Int((ContinuousClock.now - started).components.seconds) }

    var playtime: Int {
        playing.withLock { counter in
            let running = counter.since.map { ContinuousClock.now - $0 } ?? .zero
            return Int((counter.total + running).components.seconds)
        }
    }

    /// The player's state changed: the play-time counter starts or stops.
    func stateChanged(to state: PlaybackState) {
        let now = ContinuousClock.now
        playing.withLock { counter in
            let isPlaying = state == .playing
            if isPlaying, counter.since == nil { counter.since = now }
            if !isPlaying, let since = counter.since {
                counter.total += now - since
                counter.since = nil
            }
        }
    }

    // MARK: Projections of the player onto MPD's vocabulary

    /// `play`, `pause` or `stop`.
    static func stateName(_ state: PlaybackState) -> String {
        switch state {
        case .playing, .buffering(.playing), .seeking(_, .playing): "play"
        case .paused, .ready, .buffering(.paused), .seeking(_, .paused): "pause"
        case .idle, .loading, .ended, .failed: "stop"
        }
    }

    /// A song as `currentsong` and `playlistinfo` show it.
    func writeSong(_ item: QueueItem, position: Int, media: MediaInfo?, shown: MPDTags, into response: inout MPDResponse) {
        response.add("file", library.uri(for: item.url))
        let tags = player.tags(for: item.url) ?? library.cachedTags(item.url)
        if let modified = tags?.modified { response.add(lastModified: modified) }
        if let format = tags?.audioFormat { response.add("Format", format) }
        // What the decoder says of the item in play goes first: a station's title changes.
        // (Built only when there is one: `playlistinfo` writes every item of the queue.)
        var overrides: [MediaTags.Entry] = []
        if let artist = media?.artist { overrides.append(MediaTags.Entry(.artist, artist)) }
        if let album = media?.album { overrides.append(MediaTags.Entry(.album, album)) }
        if let title = media?.title ?? (tags?.title == nil ? item.title : nil) { overrides.append(MediaTags.Entry(.title, title)) }
        writeTags(tags, overrides: overrides, shown: shown, into: &response)
        if let duration = media?.duration ?? tags?.duration ?? player.duration(of: item.url) {
            response.add("Time", Int(duration.rounded()))
            response.add("duration", seconds: duration)
        }
        response.add("Pos", position)
        response.add("Id", item.id)
    }

    /// A library song as `lsinfo` and `listallinfo` show it (tags read on the library's thread).
    func writeLibrarySong(uri: String, url: URL, modified: Int, shown: MPDTags, into response: inout MPDResponse) {
        response.add("file", uri)
        response.add(lastModified: modified)
        guard let tags = library.tags(url) else { return }
        writeTags(tags, shown: shown, into: &response)
        if let duration = tags.duration {
            response.add("Time", Int(duration.rounded()))
            response.add("duration", seconds: duration)
        }
    }

    /// A song from the library's database, as MPD 0.23 prints a song (`song_print_info`).
    func writeDatabaseSong(_ song: LibrarySong, shown: MPDTags, into response: inout MPDResponse) {
        response.add("file", song.uri)
        response.add(lastModified: song.modified)
        if let format = song.format { response.add("Format", format) }
        for entry in song.tags where shown.shows(entry.tag) {
            response.add(prefix: entry.tag.linePrefix, clean: entry.value)
        }
        if let duration = song.duration {
            response.add("Time", Int(duration.rounded()))
            response.add("duration", seconds: duration)
        }
    }

    /// A song read in place by a pass over the database (`listallinfo`), in `writeDatabaseSong`'s
    /// order, straight from the database's bytes.
    func writeDatabaseSong(_ song: LibrarySongView, shown: MPDTags, into response: inout MPDResponse) {
        response.addFile(directory: song.directory, name: song.name)
        response.add(lastModified: song.modified)
        if let format = song.format { response.add(prefix: "Format: ", clean: format) }
        song.forEachTag { tag, value in
            if shown.shows(tag) { response.add(prefix: tag.linePrefix, clean: value) }
        }
        if let duration = song.duration {
            response.add("Time", Int(duration.rounded()))
            response.add("duration", seconds: duration)
        }
    }

    /// Every tag the client is shown, each value on its own line, in MPD's order of tags; an
    /// override replaces all of the file's values of its tag.
    private func writeTags(
        _ tags: MediaTags?, overrides: [MediaTags.Entry] = [], shown: MPDTags,
        into response: inout MPDResponse
    ) {
        var entries = tags?.entries ?? []
        if !overrides.isEmpty {
            let replaced = Set(overrides.map(\.tag))
            entries = MediaTags(entries: entries.filter { !replaced.contains($0.tag) } + overrides).entries
        }
        for entry in entries where shown.shows(entry.tag) {
            if overrides.isEmpty {
                response.add(prefix: entry.tag.linePrefix, clean: entry.value)
            } else {
                response.add(entry.tag.name, entry.value)
            }
        }
    }

    /// MPD's `Last-Modified` form: ISO 8601 in UTC.
    static func timestamp(_ seconds: Int) -> String {
        var text: [UInt8] = []
        text.reserveCapacity(20)
        MPDTimestamp.write(seconds, into: &text)
        return String(decoding: text, as: UTF8.self)
    }

    /// `audio: rate:bits:channels`, with `f` for floating-point samples, as MPD writes a format.
    static func audioFormat(_ media: MediaInfo) -> String {
        PCMFormat(sampleType: media.outputFormat.sampleType, sampleRate: media.sampleRate, channels: media.channels)
            .mpdText(sourceBits: media.bitsPerSample)
    }
}

extension MediaTag {
    /// The start of the tag's line in a listing, `name: `, as a static string: written for every
    /// tag of every song, with no lookup and no reference to count (MPDProtocolTests holds it to
    /// `name`).
    var linePrefix: StaticString {
        switch self {
        case .artist: "Artist: "
        case .artistSort: "ArtistSort: "
        case .album: "Album: "
        case .albumSort: "AlbumSort: "
        case .albumArtist: "AlbumArtist: "
        case .albumArtistSort: "AlbumArtistSort: "
        case .title: "Title: "
        case .track: "Track: "
        case .name: "Name: "
        case .genre: "Genre: "
        case .date: "Date: "
        case .originalDate: "OriginalDate: "
        case .composer: "Composer: "
        case .performer: "Performer: "
        case .conductor: "Conductor: "
        case .work: "Work: "
        case .ensemble: "Ensemble: "
        case .movement: "Movement: "
        case .movementNumber: "MovementNumber: "
        case .location: "Location: "
        case .grouping: "Grouping: "
        case .comment: "Comment: "
        case .disc: "Disc: "
        case .label: "Label: "
        case .musicBrainzArtistID: "MUSICBRAINZ_ARTISTID: "
        case .musicBrainzAlbumID: "MUSICBRAINZ_ALBUMID: "
        case .musicBrainzAlbumArtistID: "MUSICBRAINZ_ALBUMARTISTID: "
        case .musicBrainzTrackID: "MUSICBRAINZ_TRACKID: "
        case .musicBrainzReleaseTrackID: "MUSICBRAINZ_RELEASETRACKID: "
        case .musicBrainzWorkID: "MUSICBRAINZ_WORKID: "
        }
    }
}
