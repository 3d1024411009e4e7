import Foundation
import NIOCore
import NIOHTTP1
import Testing
import TonearmFrontEnd

@testable import TonearmWeb

@Suite("The web remote's page and access rules", .timeLimit(.minutes(1)))
struct WebPageTests {
    static let pageDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Sources/TonearmWeb/Page")

    /// The page served is the page's files, each with its type, and a gzip copy that unpacks to
    /// the same bytes.
    @Test func theServedPageIsThePagesFiles() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.pageDirectory.path).sorted()
        #expect(WebPage.embedded.map(\.name) == names, "a file of the page is not in Package.swift's resources")
        for file in WebPage.embedded {
            let disk = try Data(contentsOf: Self.pageDirectory.appendingPathComponent(file.name))
            #expect(file.body == Array(disk), "\(file.name) is not what is built in")
            let served = try #require(WebPage.shared.files["/" + file.name])
            #expect(served.body == file.body && served.type == file.type)
            let gzipped = try #require(served.gzipped)
            #expect(gzipped.starts(with: [0x1F, 0x8B]))
            #expect(try Self.gunzip(gzipped) == file.body, "\(file.name)'s gzip is of other bytes")
        }
        let page = WebPage.shared
        #expect(page.files["/index.html"]?.type == "text/html; charset=utf-8")
        #expect(page.files.values.reduce(0) { $0 + $1.body.count } <= 150_000, "the page's budget: 150 KB in all")
    }

    /// What gzip(1) makes of `bytes` when it unpacks them (the page's files are small: the
    /// pipes never fill).
    static func gunzip(_ bytes: [UInt8]) throws -> [UInt8] {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("tonearm-page-\(UUID().uuidString).gz")
        try Data(bytes).write(to: path)
        defer { try? FileManager.default.removeItem(at: path) }
        let gzip = Process()
        gzip.executableURL = URL(fileURLWithPath: "/bin/gzip")
        gzip.arguments = ["-dc", path.path]
        let output = Pipe()
        gzip.standardOutput = output
        try gzip.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        gzip.waitUntilExit()
        return Array(data)
    }

    @Test func etagsFollowTheBytes() {
        #expect(WebPage.etag([1, 2, 3]) == WebPage.etag([1, 2, 3]))
        #expect(WebPage.etag([1, 2, 3]) != WebPage.etag([1, 2, 4]))
        #expect(WebPage.etag([]).hasPrefix("\""))
    }

    private func head(_ headers: [(String, String)]) -> HTTPRequestHead {
        HTTPRequestHead(version: .http1_1, method: .GET, uri: "/rpc", headers: HTTPHeaders(headers))
    }

    @Test(arguments: [
        ([("Host", "127.0.0.1:6680")], true),
        ([("Host", "127.0.0.1:6680"), ("Origin", "http://127.0.0.1:6680")], true),
        ([("Host", "box.local:6680"), ("Origin", "http://BOX.local:6680")], true),
        ([("Host", "box.local"), ("Origin", "http://box.local")], true),
        ([("Host", "[::1]:6680"), ("Origin", "http://[::1]:6680")], true),
        ([("Host", "127.0.0.1:6680"), ("Origin", "http://127.0.0.1:6681")], false),
        ([("Host", "127.0.0.1:6680"), ("Origin", "http://evil.example:6680")], false),
        ([("Host", "127.0.0.1:6680"), ("Origin", "null")], false),
        ([("Origin", "http://127.0.0.1:6680")], false),
    ])
    func onlyThisServersPagesMayAct(headers: [(String, String)], allowed: Bool) {
        #expect(WebAccess.isSameOrigin(head(headers)) == allowed)
    }

    /// DNS rebinding: a page of evil.example whose name now points at 127.0.0.1 sends
    /// `Host: evil.example`. Only this server's own names and addresses are served.
    @Test(arguments: [
        ("127.0.0.1:6680", true), ("[::1]:6680", true), ("192.168.1.20", true), ("localhost:6680", true),
        ("LOCALHOST.:6680", true), ("jukebox.example.net:6680", true), ("box", true), ("box.local:6680", true),
        ("rebind.evil.example:6680", false), ("evil.example", false), ("127.evil.example", false), ("", false),
        ("[::1", false), ("box.evil.example", false),
    ])
    func onlyThisServersNamesAreServed(host: String, allowed: Bool) {
        let access = WebAccess(password: nil, hosts: ["localhost", "box", "box.local", "jukebox.example.net"])
        #expect(access.allowsHost(head([("Host", host)])) == allowed, "Host: \(host)")
    }

    @Test func aRequestWithoutHostIsServedOnlyOverHTTP10() {
        let access = WebAccess(password: nil)
        #expect(!access.allowsHost(head([])), "HTTP/1.1 needs Host")
        #expect(access.allowsHost(HTTPRequestHead(version: .http1_0, method: .GET, uri: "/", headers: [:])))
    }

    @Test func theBoxsOwnNamesAreKnown() {
        let names = WebAccess.hosts(bind: TCPAddress("0.0.0.0:6680")!, extra: ["Jukebox.Example.net."])
        #expect(names.isSuperset(of: ["localhost", "jukebox.example.net"]))
        var buffer = [CChar](repeating: 0, count: 256)
        #expect(gethostname(&buffer, 255) == 0)
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self).lowercased()
        #expect(names.contains(name) && names.contains((name.split(separator: ".").first.map(String.init) ?? name) + ".local"))
    }

    /// A read password earns a token that reads; the password, one that controls.
    @Test func aReadPasswordGivesAReadOnlyToken() throws {
        let access = WebAccess(password: "boss", readPassword: "guest")
        let start = NIODeadline.now()
        guard case .accepted(let control) = access.login("boss", from: "a", now: start),
            case .accepted(let read) = access.login("guest", from: "b", now: start)
        else {
            Issue.record("both passwords are accepted")
            return
        }
        let controlToken = String(control.split(separator: ";")[0])
        let readToken = String(read.split(separator: ";")[0])
        #expect(controlToken != readToken)
        #expect(access.level(head([("Cookie", controlToken)])) == .control)
        #expect(access.level(head([("Cookie", readToken)])) == .read)
        #expect(access.level(head([])) == .none)
        #expect(WebAccess(password: "boss").login("guest", from: "c", now: start) == .refused, "no read password: refused")
        #expect(WebAccess(password: nil).level(head([])) == .control)
    }

    @Test func theWebRemoteNeedsAPasswordWhereverOthersDo() {
        var settings = WebSettings()
        let open = ControlSecurity()
        var listed = ControlSecurity()
        listed.policy.allowUIDs = [0]
        #expect(settings.refusal(with: open, mpdPassword: nil) == nil, "loopback, no lists, no MPD password")
        #expect(settings.refusal(with: listed, mpdPassword: nil)?.contains("control.allow_uids") == true)
        #expect(settings.refusal(with: open, mpdPassword: "x")?.contains("mpd.password") == true)
        settings.bind = TCPAddress("127.evil.example:6680")!
        #expect(settings.refusal(with: open, mpdPassword: nil)?.contains("other machines") == true, "a name is not an address")
        settings.password = "p"
        #expect(settings.refusal(with: listed, mpdPassword: "x") == nil)
        settings.readPassword = "p"
        #expect(settings.refusal(with: open, mpdPassword: nil)?.contains("must differ") == true)
        settings.password = nil
        #expect(settings.refusal(with: open, mpdPassword: nil)?.contains("without http.password") == true)
        settings.enabled = false
        #expect(settings.refusal(with: listed, mpdPassword: "x") == nil, "off: nothing to refuse")
    }

    @Test func aWrongPasswordMakesTheNextTryWait() {
        let access = WebAccess(password: "secret")
        let start = NIODeadline.now()
        #expect(access.login("nope", from: "a", now: start) == .refused)
        #expect(access.login("secret", from: "a", now: start + .milliseconds(500)) == .wait(seconds: 1))
        #expect(access.login("nope", from: "b", now: start) == .refused, "another address is counted on its own")
        #expect(access.login("nope", from: "a", now: start + .seconds(2)) == .refused)
        #expect(access.login("secret", from: "a", now: start + .seconds(3)) == .wait(seconds: 2), "the second wait is longer")
        guard case .accepted(let cookie) = access.login("secret", from: "a", now: start + .seconds(5)) else {
            Issue.record("the right password after the wait")
            return
        }
        #expect(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"))
        let token = String(cookie.split(separator: ";")[0])
        #expect(access.allows(head([("Cookie", "theme=dark; " + token)])))
        #expect(!access.allows(head([("Cookie", "tonearm_token=0000")])))
        #expect(!access.allows(head([])))
        #expect(WebAccess(password: nil).allows(head([])), "no password: everyone who reaches it")
    }

    @Test func queriesAreReadAsBrowsersWriteThem() {
        #expect(WebRequestHandler.split("/art?uri=a%20b") == ("/art", "uri=a%20b"))
        #expect(WebRequestHandler.split("/") == ("/", nil))
        #expect(WebRequestHandler.parameter("uri", in: "x=1&uri=Caf%C3%A9+del%2FMar") == "Café del/Mar")
        #expect(WebRequestHandler.parameter("uri", in: "uri") == nil)
        #expect(WebRequestHandler.address("[IPv4]127.0.0.1/127.0.0.1:5555") == "[IPv4]127.0.0.1/127.0.0.1")
    }
}
