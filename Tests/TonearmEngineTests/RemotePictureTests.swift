import Foundation
import Testing
import TonearmMedia
import TonearmTestSupport

@testable import TonearmEngine

/// A cast's cover fetched over the network: only an image comes back, typed by its bytes,
/// within a size and a deadline, through the network sources' rules.
@Suite("A cover is fetched over the network as an image or not at all", .timeLimit(.minutes(1)))
struct RemotePictureTests {
    static let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + Array(repeating: 7, count: 100)

    @Test(
        arguments: [
            (png, "image/png"),
            ([0xFF, 0xD8, 0xFF, 0xE0, 0, 0x10], "image/jpeg"),
            (Array("GIF89a....".utf8), "image/gif"),
            (Array("GIF87a....".utf8), "image/gif"),
            (Array("RIFF\u{0}\u{0}\u{0}\u{0}WEBPVP8 ".utf8), "image/webp"),
            (Array("RIFF\u{0}\u{0}\u{0}\u{0}WAVEfmt ".utf8), nil),
            (Array("<html><script>".utf8), nil),
            (Array("\u{89}PN".utf8), nil),
            ([], nil),
        ] as [([UInt8], String?)])
    func anImageIsKnownByItsBytes(_ bytes: [UInt8], _ type: String?) {
        #expect(RemotePicture.imageType(bytes) == type)
    }

    private func serve(_ name: String, _ bytes: [UInt8], as contentType: String) throws -> (TestHTTPServer, TemporaryDirectory) {
        let directory = try TemporaryDirectory()
        try Data(bytes).write(to: URL(fileURLWithPath: directory.path(name)))
        let server = try TestHTTPServer()
        server.route("/\(name)", .file(path: directory.path(name), contentType: contentType))
        return (server, directory)
    }

    @Test func anImageComesBackWhateverTheServerCallsIt() throws {
        let (server, directory) = try serve("cover", Self.png, as: "text/html")
        defer {
            server.stop()
            directory.remove()
        }
        let picture = try RemotePicture.fetch(URL(string: server.url("/cover"))!, input: InputConfiguration())
        #expect(picture.bytes == Self.png && picture.mimeType == "image/png")
    }

    @Test func anythingElseIsAFailureInWords() throws {
        let (server, directory) = try serve("page", Array("<html><script>alert(1)</script></html>".utf8), as: "image/png")
        defer {
            server.stop()
            directory.remove()
        }
        server.route("/gone", .status(code: 404, reason: "Not Found"))
        server.route("/elsewhere", .redirect(location: "file:///etc/passwd"))
        func failure(_ url: String) -> String? {
            do {
                _ = try RemotePicture.fetch(URL(string: url)!, input: InputConfiguration())
                return nil
            } catch { return error.description }
        }
        #expect(failure(server.url("/page"))?.contains("not a JPEG, PNG, GIF or WebP image") == true)
        #expect(failure(server.url("/gone"))?.contains("404") == true)
        #expect(failure(server.url("/elsewhere")) != nil)
        #expect(failure("file:///etc/passwd")?.contains("not an address of an allowed network protocol") == true)
    }

    @Test func tooLargeOrTooSlowIsGivenUp() throws {
        let big = Self.png + Array(repeating: 0, count: RemotePicture.maximumBytes)
        let (server, directory) = try serve("big", big, as: "image/png")
        defer {
            server.stop()
            directory.remove()
        }
        server.route("/slow", .fileStallingAt(path: directory.path("big"), contentType: "image/png", offset: 1000))
        do {
            _ = try RemotePicture.fetch(URL(string: server.url("/big"))!, input: InputConfiguration())
            Issue.record("a picture over the cap was taken")
        } catch { #expect(error.description.contains("over")) }
        let started = Date()
        do {
            _ = try RemotePicture.fetch(URL(string: server.url("/slow"))!, input: InputConfiguration(), seconds: 1)
            Issue.record("a stalled fetch came back")
        } catch { #expect(Date().timeIntervalSince(started) < 5, "given up at its deadline: \(error)") }
    }
}
