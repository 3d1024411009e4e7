import Foundation
import Testing
import TonearmFrontEnd

@Suite("Source policy: what add may queue")
struct SourcePolicyTests {
    /// The one rule of both front-ends' `add`: a file is checked where it really is, so a file
    /// reached through a link in the music directory that leads out of every root is refused.
    @Test func aFileThroughALinkOutOfTheRootsIsRefused() throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("tonearm-sources-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: base) }
        for directory in ["music", "elsewhere"] {
            try FileManager.default.createDirectory(atPath: base + "/" + directory, withIntermediateDirectories: true)
        }
        FileManager.default.createFile(atPath: base + "/music/a.flac", contents: Data())
        FileManager.default.createFile(atPath: base + "/elsewhere/x.flac", contents: Data())
        try FileManager.default.createSymbolicLink(atPath: base + "/music/link", withDestinationPath: base + "/elsewhere")
        try FileManager.default.createSymbolicLink(atPath: base + "/music/x.flac", withDestinationPath: base + "/elsewhere/x.flac")
        let policy = SourcePolicy(roots: MediaRoots([base + "/music"]))
        let inside = URL(fileURLWithPath: base + "/music/a.flac")
        #expect(policy.refusal(adding: [inside]) == nil)
        for outside in ["/music/link/x.flac", "/music/x.flac", "/music/../elsewhere/x.flac"] {
            let url = URL(fileURLWithPath: base + outside)
            #expect(policy.refusal(adding: [inside, url])?.url == url, "\(outside)")
        }
        #expect(SourcePolicy().refusal(adding: [URL(fileURLWithPath: base + "/music/link/x.flac")]) == nil, "no roots: anything")
    }

    /// A scheme is RFC 3986's (a letter, then letters, digits, + - .), two bytes at least, before
    /// a colon; anything else is a plain path.
    @Test(
        arguments: [
            ("http://host/a.mp3", "http"), ("HTTPS://h", "https"), ("concat:/a|/b", "concat"), ("svn+ssh://x", "svn+ssh"),
            ("a1.b-c:rest", "a1.b-c"), ("c:/windows", nil), ("1ab://x", nil), ("Café:x", nil), ("ab cd:x", nil),
            ("Artist/Album/01 x.flac", nil), ("no colon", nil), ("", nil), (":x", nil), ("ab:", "ab"), ("ab", nil),
        ] as [(String, String?)])
    func schemesAreRFC3986s(_ text: String, _ scheme: String?) {
        #expect(SourcePolicy.scheme(of: text) == scheme)
    }
}
