import Foundation
import Testing
import TonearmTestSupport

extension DaemonTests {
    /// The library as M.A.L.P. and myMPD browse it, through python-mpd2, held to Debian's MPD.
    @Suite("Daemon's library answers phone and web clients' queries", .serialized, .realDaemon(minutes: 5))
    struct DaemonLibraryClientTests {
        /// One answer as JSON with sorted keys (python-mpd2 gives dictionaries), without `key`.
        private static func canonical(_ value: Any?, dropping key: String?) -> String {
            func strip(_ value: Any) -> Any {
                if let list = value as? [Any] { return list.map(strip) }
                if var dictionary = value as? [String: Any] {
                    if let key { dictionary[key] = nil }
                    return dictionary.mapValues(strip)
                }
                return value
            }
            guard let value,
                let data = try? JSONSerialization.data(withJSONObject: strip(value), options: [.sortedKeys, .fragmentsAllowed])
            else { return "nothing" }
            return String(decoding: data, as: UTF8.self)
        }

        @Test func malpAndMyMPDQueriesAnswerAsMPDs() throws {
            let python = try pythonWithMPD2()
            let directory = try TemporaryDirectory()
            defer { directory.remove() }
            let tree = try MusicTree(at: directory.path("music"), DaemonLibraryTests.songs)
            let peer = try DebianMPD(musicDirectory: tree.root)
            defer { peer.stop() }
            let daemon = try DaemonLibraryTests.start(tree.root, directory)
            try withExtendedLifetime(daemon) {
                try DaemonLibraryTests.waitForScan(try daemon.connectMPD())
                let script = Fixtures.directory.deletingLastPathComponent().appendingPathComponent("Scripts/library_clients_mpd.py").path
                let ours = try runTool(python, [script, daemon.mpdSocketPath], timeout: 60)
                let theirs = try runTool(python, [script, peer.socket], timeout: 60)
                try #require(ours.status == 0, "\(ours.output)\n\(daemon.log)")
                try #require(theirs.status == 0, "\(theirs.output)")
                let mine = try #require(JSONSerialization.jsonObject(with: Data(ours.output.utf8)) as? [String: Any])
                let expected = try #require(JSONSerialization.jsonObject(with: Data(theirs.output.utf8)) as? [String: Any])
                #expect(Set(mine.keys) == Set(expected.keys))
                for key in expected.keys.sorted() {
                    // A sorted reply keeps each song's Format (MPD 0.23 leaves it out there; docs/mpd.md).
                    let sorted = [
                        "mympd_search_window", "mympd_search_window_next", "mympd_find_sorted", "mympd_find_base",
                        "mympd_find_not",
                    ].contains(key)
                    let a = Self.canonical(mine[key], dropping: sorted ? "format" : nil)
                    let b = Self.canonical(expected[key], dropping: sorted ? "format" : nil)
                    #expect(a == b, "\(key):\n\(a)\nMPD:\n\(b)")
                }
                // Not an empty shelf: each view found something.
                for key in [
                    "malp_albumartists", "malp_albums_by_albumartist", "malp_album_tracks", "malp_search_any",
                    "mympd_search_window", "mympd_find_sorted", "mympd_count_group",
                ] {
                    let found = (mine[key] as? [Any])?.count ?? (mine[key] as? [String: Any])?.count ?? 0
                    #expect(found > 0, "\(key) is empty")
                }
            }
        }
    }
}
