/// The tags a song can carry, named as MPD names them (MPD 0.23's `tag_item_names`), in the
/// order MPD lists them. Files name them in many ways: `tag(forMetadataKey:)` maps the keys
/// FFmpeg reports (Vorbis comments, ID3v2 frames as FFmpeg converts them, MP4 atoms, APE and
/// TXXX descriptions) onto these.
package enum MediaTag: Int, Sendable, CaseIterable, Hashable, Comparable {
    case artist
    case artistSort
    case album
    case albumSort
    case albumArtist
    case albumArtistSort
    case title
    case track
    case name
    case genre
    case date
    case originalDate
    case composer
    case performer
    case conductor
    case work
    case ensemble
    case movement
    case movementNumber
    case location
    case grouping
    case comment
    case disc
    case label
    case musicBrainzArtistID
    case musicBrainzAlbumID
    case musicBrainzAlbumArtistID
    case musicBrainzTrackID
    case musicBrainzReleaseTrackID
    case musicBrainzWorkID

    /// The tag's name in MPD's protocol.
    package var name: String {
        switch self {
        case .artist: "Artist"
        case .artistSort: "ArtistSort"
        case .album: "Album"
        case .albumSort: "AlbumSort"
        case .albumArtist: "AlbumArtist"
        case .albumArtistSort: "AlbumArtistSort"
        case .title: "Title"
        case .track: "Track"
        case .name: "Name"
        case .genre: "Genre"
        case .date: "Date"
        case .originalDate: "OriginalDate"
        case .composer: "Composer"
        case .performer: "Performer"
        case .conductor: "Conductor"
        case .work: "Work"
        case .ensemble: "Ensemble"
        case .movement: "Movement"
        case .movementNumber: "MovementNumber"
        case .location: "Location"
        case .grouping: "Grouping"
        case .comment: "Comment"
        case .disc: "Disc"
        case .label: "Label"
        case .musicBrainzArtistID: "MUSICBRAINZ_ARTISTID"
        case .musicBrainzAlbumID: "MUSICBRAINZ_ALBUMID"
        case .musicBrainzAlbumArtistID: "MUSICBRAINZ_ALBUMARTISTID"
        case .musicBrainzTrackID: "MUSICBRAINZ_TRACKID"
        case .musicBrainzReleaseTrackID: "MUSICBRAINZ_RELEASETRACKID"
        case .musicBrainzWorkID: "MUSICBRAINZ_WORKID"
        }
    }

    package static func < (lhs: MediaTag, rhs: MediaTag) -> Bool { lhs.rawValue < rhs.rawValue }

    /// The tag a client names, matched without regard to case as MPD does.
    package static func tag(named name: String) -> MediaTag? { byName[name.lowercased()] }

    private static let byName: [String: MediaTag] = Dictionary(uniqueKeysWithValues: allCases.map { ($0.name.lowercased(), $0) })

    /// The tag a file's metadata key stands for, matched without regard to case; nil for keys
    /// that are no song tag (encoder, ReplayGain, ICY headers, …).
    package static func tag(forMetadataKey key: String) -> MediaTag? {
        byKey[key.lowercased()]
    }

    /// Lowercased metadata keys: MPD's own name, the Vorbis comment, FFmpeg's name for the ID3v2
    /// frame or MP4 atom, and Picard's TXXX/APE descriptions.
    private static let byKey: [String: MediaTag] = {
        var keys: [String: MediaTag] = [:]
        for tag in allCases { keys[tag.name.lowercased()] = tag }
        let aliases: [(MediaTag, [String])] = [
            (.artistSort, ["artist-sort", "sort_artist", "artistsort", "tsop"]),
            (.albumSort, ["album-sort", "sort_album", "albumsort", "tsoa"]),
            (.albumArtist, ["album_artist", "album artist", "albumartist", "tpe2"]),
            (.albumArtistSort, ["album_artist-sort", "sort_album_artist", "albumartistsort", "tso2"]),
            (.track, ["tracknumber", "trck"]),
            (.date, ["year", "tdrc", "tyer"]),
            (.originalDate, ["original_date", "originaldate", "originalyear", "tdor"]),
            (.composer, ["tcom"]),
            (.performer, ["tpe3"]),
            (.conductor, []),
            (.work, ["©wrk"]),
            (.movement, ["movementname", "mvnm", "©mvn"]),
            (.movementNumber, ["mvin", "©mvi"]),
            (.grouping, ["contentgroup", "tit1", "©grp"]),
            (.disc, ["discnumber", "tpos"]),
            (.label, ["publisher", "organization", "tpub"]),
            (.musicBrainzArtistID, ["musicbrainz artist id"]),
            (.musicBrainzAlbumID, ["musicbrainz album id"]),
            (.musicBrainzAlbumArtistID, ["musicbrainz album artist id"]),
            (.musicBrainzTrackID, ["musicbrainz_recordingid", "musicbrainz recording id"]),
            (.musicBrainzReleaseTrackID, ["musicbrainz release track id"]),
            (.musicBrainzWorkID, ["musicbrainz work id"]),
        ]
        for (tag, names) in aliases {
            for name in names { keys[name] = tag }
        }
        return keys
    }()
}
