import TonearmMedia

/// The tag codes written to the database. `MediaTag`'s raw values follow MPD's order and may
/// change when a tag is added; a database outlives a build, so its codes are this list's
/// positions, which only ever grows at the end.
enum StoredTag {
    /// Append only: a code, once written, means this tag for ever.
    private static let names: [String] = [
        "Artist", "ArtistSort", "Album", "AlbumSort", "AlbumArtist", "AlbumArtistSort", "Title", "TitleSort",
        "Track", "Name", "Genre", "Mood", "Date", "OriginalDate", "Composer", "ComposerSort", "Performer",
        "Conductor", "Work", "Ensemble", "Movement", "MovementNumber", "Location", "Grouping", "Comment", "Disc",
        "Label", "MUSICBRAINZ_ARTISTID", "MUSICBRAINZ_ALBUMID", "MUSICBRAINZ_ALBUMARTISTID", "MUSICBRAINZ_TRACKID",
        "MUSICBRAINZ_RELEASETRACKID", "MUSICBRAINZ_WORKID", "MUSICBRAINZ_RELEASEGROUPID",
    ]
    private static let codes: [MediaTag: Int] = {
        var codes: [MediaTag: Int] = [:]
        for (index, name) in names.enumerated() {
            if let tag = MediaTag.tag(named: name) { codes[tag] = index + 1 }
        }
        return codes
    }()
    /// By code: a listing looks up every value's tag, and an array costs no hashing.
    private static let tags: [MediaTag?] = {
        var tags = [MediaTag?](repeating: nil, count: names.count + 1)
        for (tag, code) in codes { tags[code] = tag }
        return tags
    }()

    static func code(_ tag: MediaTag) -> Int? { codes[tag] }
    static func tag(_ code: Int) -> MediaTag? { tags.indices.contains(code) ? tags[code] : nil }
    /// Every tag `MediaTag` has that this list does not: a test keeps it empty.
    static var unstored: [MediaTag] { MediaTag.allCases.filter { codes[$0] == nil } }
}
