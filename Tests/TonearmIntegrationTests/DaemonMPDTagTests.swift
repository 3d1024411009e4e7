import Foundation
import Testing
import TonearmTestSupport

extension DaemonTests {
    /// The tags of a song, as Debian's MPD 0.23 shows them beside the daemon, on the same files.
    @Suite("Daemon shows every tag MPD shows", .serialized, .realDaemon(minutes: 2))
    struct DaemonMPDTagTests {
        /// Every tag MPD knows, as `tagtypes` lists them.
        static let tagNames: Set<String> = [
            "Artist", "ArtistSort", "Album", "AlbumSort", "AlbumArtist", "AlbumArtistSort", "Title", "Track", "Name",
            "Genre", "Date", "OriginalDate", "Composer", "Performer", "Conductor", "Work", "Ensemble", "Movement",
            "MovementNumber", "Location", "Grouping", "Comment", "Disc", "Label", "MUSICBRAINZ_ARTISTID",
            "MUSICBRAINZ_ALBUMID", "MUSICBRAINZ_ALBUMARTISTID", "MUSICBRAINZ_TRACKID", "MUSICBRAINZ_RELEASETRACKID",
            "MUSICBRAINZ_WORKID",
        ]

        /// Tags as taggers write them in each format: Vorbis comments (Picard's names), ID3v2.4
        /// frames (FFmpeg's names for them, and Picard's TXXX descriptions), MP4 atoms.
        static let vorbisComments: [(String, String)] = [
            ("TITLE", "Night Song"), ("ARTIST", "First Voice"), ("ARTIST", "Second Voice"), ("ALBUM", "Tagged Album"),
            ("ALBUMARTIST", "The Ensemble"), ("DATE", "2021-05-04"), ("GENRE", "Jazz"), ("TRACKNUMBER", "3/12"),
            ("DISCNUMBER", "1/2"), ("COMPOSER", "A. Composer"), ("PERFORMER", "Guest Player"),
            ("CONDUCTOR", "B. Conductor"), ("COMMENT", "a note"), ("LABEL", "Small Label"),
            ("ARTISTSORT", "Voice, First"), ("ALBUMSORT", "Tagged Album, The"), ("ALBUMARTISTSORT", "Ensemble, The"),
            ("ORIGINALDATE", "1999"), ("WORK", "Suite No. 1"), ("MOVEMENTNAME", "Allegro"), ("GROUPING", "Group"),
            ("MUSICBRAINZ_ARTISTID", "11111111-1111-1111-1111-111111111111"),
            ("MUSICBRAINZ_ALBUMID", "22222222-2222-2222-2222-222222222222"),
            ("MUSICBRAINZ_TRACKID", "33333333-3333-3333-3333-333333333333"),
        ]
        static let id3Frames: [(String, String)] = [
            ("title", "Night Song"), ("artist", "First Voice"), ("album", "Tagged Album"),
            ("album_artist", "The Ensemble"), ("date", "2021-05-04"), ("genre", "Jazz"), ("track", "3/12"),
            ("disc", "1/2"), ("composer", "A. Composer"), ("performer", "B. Conductor"), ("publisher", "Small Label"),
            ("artist-sort", "Voice, First"), ("album-sort", "Tagged Album, The"), ("comment", "a note"),
            ("MusicBrainz Artist Id", "11111111-1111-1111-1111-111111111111"),
            ("MusicBrainz Album Id", "22222222-2222-2222-2222-222222222222"),
        ]
        static let mp4Atoms: [(String, String)] = [
            ("title", "Night Song"), ("artist", "First Voice"), ("album", "Tagged Album"),
            ("album_artist", "The Ensemble"), ("date", "2021-05-04"), ("genre", "Jazz"), ("track", "3/12"),
            ("disc", "1/2"), ("composer", "A. Composer"), ("grouping", "Group"), ("comment", "a note"),
        ]

        @Test(arguments: ["flac", "ogg", "opus", "mp3", "m4a"])
        func aSongShowsTheTagsMPDShows(_ format: String) throws {
            let music = try TemporaryDirectory()
            defer { music.remove() }
            let name = "tagged.\(format)"
            var arguments = [
                "-nostdin", "-hide_banner", "-loglevel", "error", "-i", Fixtures.path("tone.flac"),
                "-map_metadata", "-1",
            ]
            let metadata =
                switch format {
                case "mp3": Self.id3Frames
                case "m4a": Self.mp4Atoms
                default: Self.vorbisComments
                }
            for (key, value) in metadata { arguments += ["-metadata", "\(key)=\(value)"] }
            switch format {
            case "ogg": arguments += ["-c:a", "libvorbis"]
            case "opus": arguments += ["-c:a", "libopus"]
            case "m4a": arguments += ["-c:a", "aac"]
            case "mp3": arguments += ["-id3v2_version", "4"]
            default: break
            }
            let made = try runTool("/usr/bin/ffmpeg", arguments + [music.path(name)], timeout: 30)
            try #require(made.status == 0, "\(made.output)")

            let peer = try DebianMPD(musicDirectory: music.url.path)
            defer { peer.stop() }
            let expected = try Self.songTags(peer.connect(), name)
            #expect(expected.contains("Title: Night Song"), "the peer read the file: \(expected) \(peer.log)")

            let config = music.path(".tonearmd.toml")
            try "[mpd]\nmusic_directory = \"\(music.url.path)\"\n".write(toFile: config, atomically: true, encoding: .utf8)
            let daemon = try DaemonProcess(arguments: ["--device", "null", "--config", config])
            let shown = try withExtendedLifetime(daemon) { try Self.songTags(daemon.connectMPD(), name) }
            #expect(shown == expected)
        }

        /// The tag lines `playlistinfo` shows for `name`, queued alone.
        /// The daemon reads a queued file's tags on a thread of its own: they are waited for.
        static func songTags(_ client: MPDTestClient, _ name: String) throws -> [String] {
            #expect(try client.command("add \"\(name)\"").ok)
            let deadline = Date().addingTimeInterval(5 * Sanitizer.timeScale)
            while true {
                let tags = try client.command("playlistinfo").lines.filter { line in
                    guard let colon = line.firstIndex(of: ":") else { return false }
                    return tagNames.contains(String(line[..<colon]))
                }
                if !tags.isEmpty || Date() > deadline { return tags.sorted() }
                usleep(20_000)
            }
        }
    }
}
