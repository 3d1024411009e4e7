import Foundation
import Testing
import TonearmTestSupport

#if canImport(Glibc)
    import Glibc
#endif

extension DaemonTests {
    /// The web remote (`[http]`) on the real daemon: the page in Debian's headless Chromium,
    /// driven by Selenium (Tests/Scripts/web_remote_browser.py), and what no browser sends, by
    /// hand.
    @Suite("Daemon serves a web remote", .serialized, .realDaemon(minutes: 4, alone: true))
    struct DaemonWebTests {
        /// Three 120 s songs in two albums, with a cover beside the first album: one plays
        /// through the longest test (about 33 s under a sanitizer) without ending.
        static func tree(_ directory: TemporaryDirectory) throws -> String {
            let music = directory.path("music")
            let songs = [
                ("Alpha/One/01 First.flac", "Alpha", "One", "First", "1"),
                ("Alpha/One/02 Second.flac", "Alpha", "One", "Second", "2"),
                ("Beta/Two/01 Third.flac", "Beta", "Two", "Third", "1"),
            ]
            for (path, artist, album, title, track) in songs {
                let target = music + "/" + path
                try FileManager.default.createDirectory(
                    atPath: (target as NSString).deletingLastPathComponent,
                    withIntermediateDirectories: true)
                let made = try runTool(
                    "/usr/bin/ffmpeg",
                    [
                        "-v", "error", "-y", "-f", "lavfi", "-i", "sine=f=440:d=120:sample_rate=44100",
                        "-ac", "2", "-metadata", "artist=\(artist)", "-metadata", "album=\(album)",
                        "-metadata", "title=\(title)", "-metadata", "track=\(track)", "-c:a", "flac", target,
                    ],
                    timeout: 60)
                try #require(made.status == 0, "ffmpeg: \(made.output)")
            }
            let cover = try runTool(
                "/usr/bin/ffmpeg",
                [
                    "-v", "error", "-y", "-f", "lavfi", "-i", "color=c=red:s=64x64", "-frames:v", "1",
                    music + "/Alpha/One/cover.jpg",
                ], timeout: 60)
            try #require(cover.status == 0, "ffmpeg: \(cover.output)")
            return music
        }

        /// The daemon on `music`, its web remote on a free port, paced like a sound card.
        static func start(_ directory: TemporaryDirectory, music: String, http: String = "") throws -> (DaemonProcess, Int) {
            let port = try freeTCPPort()
            let config = directory.path("tonearmd.toml")
            try "[library]\nmusic_directory = \"\(music)\"\n[http]\nbind = \"127.0.0.1:\(port)\"\n\(http)"
                .write(toFile: config, atomically: true, encoding: .utf8)
            let daemon = try DaemonProcess(arguments: ["--device", "null", "--pace", "--config", config], webRemote: true)
            let client = try daemon.connect()
            let deadline = Date().addingTimeInterval(20 * Sanitizer.timeScale)
            while true {
                let stats = try #require(client.call("library.stats").result)
                if stats["updating"] == nil, stats["songs"] as? Int == 3 { break }
                guard Date() < deadline else { throw LineClient.Failure(description: "the scan did not end: \(stats)") }
                usleep(20_000)
            }
            return (daemon, port)
        }

        /// The process's resident memory (VmRSS), KiB.
        static func residentKiB(_ pid: Int32) -> Int {
            let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
            let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
            return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
        }

        static func browserScript(_ arguments: [String]) throws {
            let root = Fixtures.directory.deletingLastPathComponent().deletingLastPathComponent()
            let artifacts = root.appendingPathComponent(".build/test-artifacts").path
            try FileManager.default.createDirectory(atPath: artifacts, withIntermediateDirectories: true)
            let script = root.appendingPathComponent("Tests/Scripts/web_remote_browser.py").path
            // coreutils' timeout runs it in a process group of its own and stops the whole group
            // (Chromium and chromedriver too) if it overruns.
            var environment = ProcessInfo.processInfo.environment
            environment["TIME_SCALE"] = String(Sanitizer.timeScale)
            let result = try runTool(
                "/usr/bin/timeout", ["-k", "5", "140", "/usr/bin/python3", script] + arguments + [artifacts],
                environment: environment, timeout: 150)
            print(result.output)
            #expect(result.status == 0, "\(result.output)")
        }

        @Test func thePageInABrowserShowsAndControlsThePlayer() throws {
            let directory = try TemporaryDirectory()
            defer { directory.remove() }
            let (daemon, port) = try Self.start(directory, music: try Self.tree(directory))
            try withExtendedLifetime(daemon) {
                let tonearmctl = (DaemonProcess.binary() as NSString).deletingLastPathComponent + "/tonearmctl"
                try Self.browserScript([
                    "open", "http://127.0.0.1:\(port)/", daemon.socketPath,
                    (daemon.socketPath as NSString).deletingLastPathComponent + "/mpd.sock", tonearmctl,
                ])
            }
        }

        @Test func aPasswordIsAskedOnceAndKept() throws {
            let directory = try TemporaryDirectory()
            defer { directory.remove() }
            let (daemon, port) = try Self.start(
                directory, music: try Self.tree(directory), http: "password = \"opensesame\"\nread_password = \"lookonly\"\n")
            try withExtendedLifetime(daemon) {
                try Self.browserScript(["password", "http://127.0.0.1:\(port)/", "opensesame"])
                // Without the token: no WebSocket, no covers; the page itself and its session say so.
                let web = try WebClient(port: port)
                #expect(try web.upgrade()?.status == 401)
                #expect(try WebClient(port: port).request("GET", "/art?uri=Alpha/One")?.status == 401)
                let session = try #require(try WebClient(port: port).request("GET", "/session"))
                #expect(session.text == "{\"password\":true,\"authorized\":false,\"read_only\":false}", "\(session.text)")
                // With it: both.
                let login = try #require(
                    try WebClient(port: port).request("POST", "/login", body: Array("{\"password\":\"opensesame\"}".utf8)))
                #expect(login.status == 204)
                let cookie = try #require(login.headers["set-cookie"]?.split(separator: ";").first.map(String.init))
                #expect(try WebClient(port: port).upgrade(headers: ["Cookie": cookie])?.status == 101)
                #expect(try WebClient(port: port).request("GET", "/art?uri=Alpha/One", headers: ["Cookie": cookie])?.status == 200)
                #expect(daemon.log.contains("web remote: wrong password"), "the wrong password is logged")
                // The read password's token reads and is refused control, as read_gids on the socket.
                let readLogin = try #require(
                    try WebClient(port: port).request("POST", "/login", body: Array("{\"password\":\"lookonly\"}".utf8)))
                let readCookie = try #require(readLogin.headers["set-cookie"]?.split(separator: ";").first.map(String.init))
                #expect(
                    try WebClient(port: port).request("GET", "/session", headers: ["Cookie": readCookie])?.text
                        == "{\"password\":true,\"authorized\":true,\"read_only\":true}")
                let reader = try WebClient(port: port)
                #expect(try reader.upgrade(headers: ["Cookie": readCookie])?.status == 101)
                #expect(reader.sendText("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"status\"}"))
                #expect(try reader.message()?["result"] != nil)
                #expect(reader.sendText("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"volume\",\"params\":{\"level\":3}}"))
                let refused = try #require(try reader.message())
                #expect(
                    ((refused["error"] as? [String: Any])?["message"] as? String)?.contains("needs control access") == true,
                    "\(refused)")
            }
        }

        /// Covers by library path and by queue item, with ETags; the page's files with ETags and
        /// gzip; a page of another site may not open the WebSocket.
        @Test func coversPagesAndOrigins() throws {
            let directory = try TemporaryDirectory()
            defer { directory.remove() }
            let music = try Self.tree(directory)
            let (daemon, port) = try Self.start(directory, music: music)
            try withExtendedLifetime(daemon) {
                let cover = try Array(Data(contentsOf: URL(fileURLWithPath: music + "/Alpha/One/cover.jpg")))
                let art = try #require(try WebClient(port: port).request("GET", "/art?uri=Alpha/One/01%20First.flac"))
                #expect(art.status == 200 && art.body == cover && art.headers["content-type"] == "image/jpeg")
                let etag = try #require(art.headers["etag"])
                #expect(try WebClient(port: port).request("GET", "/art?uri=Alpha/One", headers: ["If-None-Match": etag])?.status == 304)
                #expect(try WebClient(port: port).request("GET", "/art?uri=Beta/Two/01%20Third.flac")?.status == 404)
                #expect(try WebClient(port: port).request("GET", "/art?uri=../etc")?.status == 403)
                let fallback = try #require(try WebClient(port: port).request("GET", "/art?uri=Beta/Two&fallback"))
                #expect(fallback.status == 200 && fallback.headers["content-type"] == "image/svg+xml")

                let client = try daemon.connect()
                let added = try #require(client.call("add", ["urls": ["Alpha/One/02 Second.flac", "Beta/Two/01 Third.flac"]]).result)
                let ids = try #require((added["items"] as? [[String: Any]])?.compactMap { $0["id"] as? Int })
                #expect(try WebClient(port: port).request("GET", "/art/\(ids[0])")?.body == cover)
                #expect(try WebClient(port: port).request("GET", "/art/\(ids[1])")?.status == 404)
                #expect(try WebClient(port: port).request("GET", "/art/9999")?.status == 404)

                let page = try #require(try WebClient(port: port).request("GET", "/", headers: ["Accept-Encoding": "gzip, deflate"]))
                #expect(page.status == 200 && page.headers["content-encoding"] == "gzip" && page.body.starts(with: [0x1F, 0x8B]))
                let plain = try #require(try WebClient(port: port).request("GET", "/index.html"))
                #expect(plain.text.contains("<title>Tonearm</title>") && plain.headers["etag"] == page.headers["etag"])
                #expect(
                    try WebClient(port: port).request("GET", "/", headers: ["If-None-Match": page.headers["etag"] ?? ""])?.status == 304)
                #expect(try WebClient(port: port).request("GET", "/nothing")?.status == 404)
                #expect(try WebClient(port: port).request("DELETE", "/")?.status == 405)

                #expect(try WebClient(port: port).upgrade(headers: ["Origin": "http://evil.example"])?.status == 403)
                // DNS rebinding: a page of another site whose name now points here names itself
                // in Host and Origin alike; neither the WebSocket nor the page is served to it.
                let rebound = ["Host": "rebind.evil.example:\(port)", "Origin": "http://rebind.evil.example:\(port)"]
                #expect(try WebClient(port: port).upgrade(headers: rebound)?.status == 403)
                #expect(try WebClient(port: port).request("GET", "/", headers: rebound)?.status == 403)
                #expect(try WebClient(port: port).request("GET", "/art?uri=Alpha/One", headers: rebound)?.status == 403)
                #expect(try WebClient(port: port).request("GET", "/", headers: ["Host": "localhost:\(port)"])?.status == 200)
                #expect(
                    try WebClient(port: port).upgrade(headers: ["Origin": "http://127.0.0.1"])?.status == 101,
                    "the page's own origin (Host is 127.0.0.1)")
            }
        }

        /// What no browser sends: each is refused or closed, and the player, the control socket
        /// and every other page go on.
        @Test func badInputIsRefusedAndHarmsNoOne() throws {
            let directory = try TemporaryDirectory()
            defer { directory.remove() }
            let (daemon, port) = try Self.start(directory, music: try Self.tree(directory))
            try withExtendedLifetime(daemon) {
                // A slow client (slowloris): a header line now and then never completes its
                // request head; it is closed 10 s after its first byte (checked at the end).
                let slow = try WebClient(port: port, timeout: 20)
                let slowStart = Date()
                #expect(slow.send("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: 1\r\n"))

                let client = try daemon.connect()
                _ = try client.call("add", ["urls": ["Alpha/One/01 First.flac"], "play": true])
                let page = try WebClient(port: port)
                #expect(try page.upgrade()?.status == 101)
                #expect(page.sendText("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"subscribe\",\"params\":{\"events\":[\"queue\"]}}"))
                #expect(try page.message()?["id"] as? Int == 1)

                // 10,000 pipelined requests, no reply read: the daemon stops reading them once
                // its replies wait (it grew by 265 MiB when it answered them all into memory).
                let before = Self.residentKiB(daemon.process.processIdentifier)
                let pipeliner = try WebClient(port: port)
                _ = fcntl(pipeliner.fd, F_SETFL, fcntl(pipeliner.fd, F_GETFL) | O_NONBLOCK)
                let all = Array(String(repeating: "GET /app.js HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", count: 10_000).utf8)
                var sent = 0
                let sending = Date()
                while sent < all.count, Date().timeIntervalSince(sending) < 5 {
                    let count = all[sent...].withUnsafeBytes { Glibc.send(pipeliner.fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                    if count > 0 { sent += count } else { usleep(10_000) }
                }
                usleep(UInt32(2_000_000 * Sanitizer.timeScale))
                let grown = Self.residentKiB(daemon.process.processIdentifier) - before
                print("pipelined: \(sent) bytes sent, RSS grew by \(grown) KiB")
                #expect(grown < 48 * 1024, "RSS grew by \(grown) KiB after \(sent) bytes of pipelined requests")

                // Headers too large to parse: a 400 that says `Connection: close`, and closed.
                let oversized = try WebClient(port: port)
                oversized.send("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + String(repeating: "a", count: 100_000) + "\r\n\r\n")
                let bad = try #require(try oversized.response())
                #expect(bad.status == 400 && bad.headers["connection"] == "close")
                let closing = Date()
                #expect(try oversized.read().isEmpty && Date().timeIntervalSince(closing) < 2, "closed at once, not after 60 s")

                // One address may hold half of http.max_clients (32 of 64); the 33rd is told so.
                // (This test holds a few connections of its own open meanwhile.)
                var crowdOfOne: [WebClient] = []
                for _ in 0..<40 { crowdOfOne.append(try WebClient(port: port)) }
                for member in crowdOfOne { _ = member.send("GET /session HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n") }
                let answers = try crowdOfOne.map { try $0.response() }
                #expect(answers.filter { $0?.status == 200 }.count <= 32)
                #expect(
                    answers.contains { $0?.status == 503 && $0?.text.contains("from one address") == true }, "\(answers.map { $0?.status })"
                )
                crowdOfOne.removeAll()
                // Their places come back as the daemon sees them close.
                let freed = Date().addingTimeInterval(5 * Sanitizer.timeScale)
                while Date() < freed, try WebClient(port: port).request("GET", "/session")?.status != 200 { usleep(20_000) }

                // A 10 MB body: refused at its head, and the connection closed.
                let big = try WebClient(port: port)
                big.send("POST /login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 10485760\r\n\r\n")
                _ = big.send([UInt8](repeating: 0x41, count: 1 << 20))
                #expect(try big.response()?.status == 413)
                #expect(try big.read().isEmpty, "closed after the refusal")

                // A 100 MB WebSocket frame: closed by its header, not read.
                let huge = try WebClient(port: port)
                #expect(try huge.upgrade()?.status == 101)
                _ = huge.sendFrame([UInt8](repeating: 0x20, count: 4096), claimedLength: 100 << 20)
                var closed = false
                while let frame = try huge.frame() { if frame.opcode == 8 { closed = true } }
                #expect(closed, "a close frame, then the end")

                // An unmasked frame (no browser sends one): a close with 1002, then the end.
                let bare = try WebClient(port: port)
                #expect(try bare.upgrade()?.status == 101)
                _ = bare.sendFrame(Array("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}".utf8), masked: false)
                var bareClose: [UInt8]?
                while let frame = try bare.frame() { if frame.opcode == 8, bareClose == nil { bareClose = frame.payload } }
                #expect(bareClose == [0x03, 0xEA], "a close with 1002 (protocol error): \(String(describing: bareClose))")

                // A WebSocket that sends and never reads: the daemon stops reading it (or drops it).
                let deaf = try WebClient(port: port)
                #expect(try deaf.upgrade()?.status == 101)
                let request = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"queue\"}"
                var writes = 0
                var flags = fcntl(deaf.fd, F_GETFL)
                flags |= O_NONBLOCK
                _ = fcntl(deaf.fd, F_SETFL, flags)
                while writes < 200_000, deaf.sendText(request) { writes += 1 }

                // 1,000 connections at once: past http.max_clients, a 503 each.
                var crowd: [WebClient] = []
                var refused = 0
                // Each waits as long as the daemon takes to refuse the ones before it (a
                // sanitizer's build takes seconds for a thousand).
                for _ in 0..<1000 { crowd.append(try WebClient(port: port, timeout: 10 * Sanitizer.timeScale)) }
                for member in crowd.suffix(100) where try member.response()?.status == 503 { refused += 1 }
                #expect(refused == 100, "the last 100 of 1,000 are told the server is full")

                // Meanwhile: the control socket answers, the music plays, and the first page hears news.
                let started = Date()
                #expect(try client.call("status").stateName == "playing")
                #expect(Date().timeIntervalSince(started) < 0.5 * Sanitizer.timeScale)
                crowd.removeAll()
                _ = try client.call("add", ["urls": ["Beta/Two/01 Third.flac"]])
                let news = try #require(try page.message())
                #expect((news["params"] as? [String: Any])?["type"] as? String == "queue", "\(news)")
                // Once the crowd is gone (the daemon sees each close as it comes), a new page is served.
                let deadline = Date().addingTimeInterval(5 * Sanitizer.timeScale)
                var served = false
                while !served, Date() < deadline {
                    served = try WebClient(port: port).request("GET", "/session")?.status == 200
                    if !served { usleep(50_000) }
                }
                #expect(served)

                // The daemon's deadline is 10 s whatever the build; a sanitizer's may close a little later.
                let waitFor = 10 + 1.5 * Sanitizer.timeScale - Date().timeIntervalSince(slowStart)
                if waitFor > 0 { usleep(UInt32(waitFor * 1_000_000)) }
                #expect(try slow.read().isEmpty, "the slow client was closed")
            }
        }
    }
}
