import Testing
import TonearmMedia

/// How files' metadata keys become MPD's tags.
@Suite("Media tags: files' keys onto MPD's tags")
struct MediaTagTests {
    /// Every tag, by the key a Vorbis comment (or MPD itself) gives it, and by the keys FFmpeg
    /// reports for ID3v2 frames and MP4 atoms. A new case fails here until it has its row.
    static let keys: [MediaTag: [String]] = [
        .artist: ["ARTIST", "artist"], .artistSort: ["ARTISTSORT", "artist-sort", "sort_artist"],
        .album: ["ALBUM"], .albumSort: ["ALBUMSORT", "album-sort", "sort_album"],
        .albumArtist: ["ALBUMARTIST", "album_artist", "ALBUM ARTIST"],
        .albumArtistSort: ["ALBUMARTISTSORT", "album_artist-sort", "sort_album_artist"],
        .title: ["TITLE"], .track: ["TRACKNUMBER", "track"], .name: ["NAME"], .genre: ["GENRE"],
        .date: ["DATE", "year"], .originalDate: ["ORIGINALDATE", "TDOR"], .composer: ["COMPOSER"],
        .performer: ["PERFORMER"], .conductor: ["CONDUCTOR"], .work: ["WORK"], .ensemble: ["ENSEMBLE"],
        .movement: ["MOVEMENTNAME", "MOVEMENT"], .movementNumber: ["MOVEMENTNUMBER"], .location: ["LOCATION"],
        .grouping: ["GROUPING", "TIT1"], .comment: ["COMMENT"], .disc: ["DISCNUMBER", "disc"],
        .label: ["LABEL", "publisher", "ORGANIZATION"],
        .musicBrainzArtistID: ["MUSICBRAINZ_ARTISTID", "MusicBrainz Artist Id"],
        .musicBrainzAlbumID: ["MUSICBRAINZ_ALBUMID", "MusicBrainz Album Id"],
        .musicBrainzAlbumArtistID: ["MUSICBRAINZ_ALBUMARTISTID", "MusicBrainz Album Artist Id"],
        .musicBrainzTrackID: ["MUSICBRAINZ_TRACKID"],
        .musicBrainzReleaseTrackID: ["MUSICBRAINZ_RELEASETRACKID", "MusicBrainz Release Track Id"],
        .musicBrainzWorkID: ["MUSICBRAINZ_WORKID", "MusicBrainz Work Id"],
    ]

    @Test(arguments: MediaTag.allCases)
    func everyTagHasItsKeysAndItsName(_ tag: MediaTag) throws {
        let keys = try #require(Self.keys[tag], "no row for \(tag)")
        for key in keys { #expect(MediaTag.tag(forMetadataKey: key) == tag, "\(key)") }
        #expect(MediaTag.tag(named: tag.name.uppercased()) == tag)
    }

    @Test func keysThatAreNoTagAreLeftOut() {
        for key in ["encoder", "REPLAYGAIN_TRACK_GAIN", "StreamTitle", "icy-name", "major_brand", ""] {
            #expect(MediaTag.tag(forMetadataKey: key) == nil, "\(key)")
        }
    }

    @Test func valuesKeepTheirOrderAndALaterDictionaryAddsOnlyNewTags() {
        let entries = MediaTags.collect([
            [("ARTIST", "One"), ("TITLE", " Song "), ("ARTIST", "Two"), ("encoder", "x"), ("GENRE", " ")],
            [("ARTIST", "Three"), ("ALBUM", "Record")],
        ])
        let tags = MediaTags(entries: entries)
        #expect(tags.values(.artist) == ["One", "Two"], "the stream's artist repeats the container's")
        #expect(tags.title == "Song" && tags.album == "Record" && tags.values(.genre).isEmpty)
        #expect(tags.entries.map(\.tag) == [.artist, .title, .artist, .album], "in the file's order, as MPD prints them")
    }
}
