import Foundation
import Testing
import TonearmProtocol
import TonearmTestSupport

#if canImport(Glibc)
    import Glibc
#endif

extension DaemonTests {
    /// The renderer driven by the control point Home Assistant itself uses (async-upnp-client
    /// from PyPI, Tests/Scripts/upnp_control_point.py), against the real daemon: found by SSDP,
    /// recognised as a DMR, cast to in HA's play_media order, then paused, sought, turned down,
    /// muted, given a next URI it joins, and stopped, which gives the queue back.
    @Suite("A UPnP control point casts to the daemon", .serialized, .realDaemon(minutes: 5))
    struct DaemonUPnPTests {
        private func renderer(_ ssdpPort: Int, extra: String = "", environment: [String: String] = [:], webPort: Int? = nil) throws -> (
            DaemonProcess, LineClient
        ) {
            let config = try TemporaryDirectory()
            let path = config.path("tonearmd.toml")
            let web = webPort.map { "[http]\nbind = \"127.0.0.1:\($0)\"\n" } ?? ""
            try "\(web)[upnp]\nenabled = true\ninterfaces = [\"lo\"]\nssdp_port = \(ssdpPort)\nname = \"Test Room\"\n\(extra)"
                .write(toFile: path, atomically: true, encoding: .utf8)
            let daemon = try DaemonProcess(
                arguments: ["--device", "null", "--pace", "--config", path], environment: environment, webRemote: webPort != nil)
            return (daemon, try daemon.connect())
        }

        /// The script's report: the last line of its output that is a JSON object.
        private func controlPoint(_ arguments: [String], timeout: Double = 90) throws -> [String: Any] {
            let python = try pythonWithUPnPClient()
            let run = try runTool(python, [upnpControlPointScript] + arguments, timeout: timeout)
            guard let line = run.output.split(separator: "\n").last(where: { $0.hasPrefix("{") }),
                let report = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            else { throw LineClient.Failure(description: "the control point said no report: \(run.output.suffix(3000))") }
            return report
        }

        @Test func homeAssistantsControlPointCastsAndStopGivesTheQueueBack() throws {
            let media = try TestHTTPServer()
            defer { media.stop() }
            media.route("/tone.flac", .file(path: Fixtures.path("tone.flac"), contentType: "audio/flac"))
            media.route("/gapless-2.flac", .file(path: Fixtures.path("gapless-2.flac"), contentType: "audio/flac"))
            // The cover the control point names: a PNG its server calls something else, which the
            // daemon fetches and types by its bytes.
            let scratch = try TemporaryDirectory()
            defer { scratch.remove() }
            let cover = scratch.path("cover.png")
            let made = try runTool(
                "/usr/bin/ffmpeg",
                ["-v", "error", "-y", "-f", "lavfi", "-i", "nullsrc=s=64x64,geq=random(1)*255:90:200", "-frames:v", "1", cover],
                timeout: 30)
            try #require(made.status == 0, "\(made.output)")
            let coverHash = try runTool("/usr/bin/sha256sum", [cover], timeout: 10).output.prefix(64)
            media.route("/art/cover", .file(path: cover, contentType: "application/octet-stream"))
            let ssdp = try freeUDPPort()
            let webPort = try freeTCPPort()
            let (daemon, json) = try renderer(ssdp, webPort: webPort)

            // The queue people built: two items, the second paused about 1.5 s in.
            _ = try json.call("add", ["urls": [Fixtures.path("tone.wav"), Fixtures.path("tone.flac")]])
            let queued = try #require(json.call("queue").result)
            let ids = try #require((queued["items"] as? [[String: Any]])?.compactMap { $0["id"] as? Int })
            _ = try json.call("play", ["id": ids[1]])
            _ = try json.call("seek", ["position": 1.5])
            _ = try json.call("pause")
            let before = try #require(json.call("status").result)
            #expect(before["source"] as? String == "queue")

            let report = try controlPoint([
                "--search", "127.0.0.1:\(ssdp)", "--media", media.url("/tone.flac"), "--next", media.url("/gapless-2.flac"),
                "--title", "Cast tone", "--control", daemon.socketPath, "--mpd", daemon.mpdSocketPath, "--timeout", "60",
                "--cover", media.url("/art/cover"), "--web", "http://127.0.0.1:\(webPort)",
            ])
            #expect(report["ok"] as? Bool == true, "\(report["error"] ?? "") failures: \(report["failures"] ?? "")")
            #expect(report["is_dmr"] as? Bool == true)
            #expect(report["friendly_name"] as? String == "Test Room")
            let events = (report["events"] as? [[String: Any]])?.compactMap { $0["vars"] as? [String: Any] } ?? []
            func evented(_ name: String, _ value: String) -> Bool { events.contains { "\($0[name] ?? "")" == value } }
            #expect(evented("TransportState", "PLAYING"))
            #expect(evented("TransportState", "PAUSED_PLAYBACK"))
            #expect(evented("Volume", "30"))
            #expect(evented("Mute", "1") || evented("Mute", "true"))
            #expect(evented("CurrentTrackURI", media.url("/gapless-2.flac")), "the next URI joined and was evented")
            #expect(evented("TransportState", "NO_MEDIA_PRESENT"), "Stop ends the cast")

            // While it played, every front-end saw the cast as the source.
            let states = report["states"] as? [String: [String: Any]] ?? [:]
            #expect(states["playing"]?["source"] as? String == "upnp")
            #expect(states["playing"]?["source_address"] as? String == "127.0.0.1")
            #expect(((states["playing"]?["media"] as? [String: Any])?["url"] as? String) == media.url("/tone.flac"))
            // The control point's DIDL-Lite is the item's description for every front-end.
            let tags = (states["playing"]?["media"] as? [String: Any])?["tags"] as? [String: Any]
            #expect(tags?["title"] as? String == "Cast tone")
            let songs = report["currentsong"] as? [String: [String: String]] ?? [:]
            #expect(songs["playing"]?["Title"] == "Cast tone", "\(songs)")
            #expect(songs["playing"]?["file"] == media.url("/tone.flac"))
            // Its cover: named to HA as sent, served fetched by the web remote and by MPD, as a PNG.
            #expect(states["playing"]?["cover_url"] as? String == media.url("/art/cover"))
            #expect((report["media_image_url"] as? [String: Any])?["playing"] as? String == media.url("/art/cover"))
            let web = (report["web_art"] as? [String: [String: Any]])?["playing"]
            #expect(web?["status"] as? Int == 200 && web?["type"] as? String == "image/png", "\(web ?? [:])")
            #expect(web?["sha256"] as? String == String(coverHash), "the web remote serves the cover's bytes")
            let mpd = (report["mpd_picture"] as? [String: [String: Any]])?["playing"]
            #expect(mpd?["type"] as? String == "image/png" && mpd?["sha256"] as? String == String(coverHash), "\(mpd ?? [:])")
            #expect(media.requests.filter { $0.path == "/art/cover" }.count == 1, "fetched once for every front-end")
            #expect(states["stopped"]?["cover_url"] == nil)
            #expect(states["stopped"]?["source"] as? String == "queue")

            // Stop gave the queue back exactly, paused where it stood.
            let after = try waitForStatus(json, timeout: 10) { $0.name == "paused" }
            #expect(after["source"] as? String == "queue")
            #expect(after["current"] as? Int == ids[1])
            let stood = before["position"] as? Double ?? -1
            #expect(abs((after["position"] as? Double ?? 0) - stood) < 0.05, "stood at \(stood): \(after)")
            let back = try #require(json.call("queue").result)
            #expect((back["items"] as? [[String: Any]])?.compactMap { $0["id"] as? Int } == ids)
            #expect(daemon.process.isRunning)
        }

        /// The renderer's HTTP port, from the daemon's log.
        private func httpPort(_ daemon: DaemonProcess) throws -> Int {
            let deadline = Date().addingTimeInterval(10)
            while Date() < deadline {
                if let range = daemon.log.range(of: #"http://127\.0\.0\.1:(\d+)/upnp/description\.xml"#, options: .regularExpression) {
                    let text = daemon.log[range].dropFirst("http://127.0.0.1:".count)
                    if let port = Int(text.prefix { $0.isNumber }) { return port }
                }
                usleep(20_000)
            }
            throw LineClient.Failure(description: "the renderer did not say where it listens: \(daemon.log)")
        }

        private func soap(_ port: Int, _ service: String, _ action: String, _ body: String) throws -> WebClient.Response? {
            let envelope =
                #"<?xml version="1.0"?><s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Body>"#
                + "<u:\(action) xmlns:u=\"urn:schemas-upnp-org:service:\(service):1\">\(body)</u:\(action)></s:Body></s:Envelope>"
            return try WebClient(port: port).request(
                "POST", "/upnp/control/\(service)",
                headers: ["SOAPACTION": "\"urn:schemas-upnp-org:service:\(service):1#\(action)\"", "Content-Type": "text/xml"],
                body: Array(envelope.utf8))
        }

        private func errorCode(_ response: WebClient.Response?) -> String? {
            guard let response, response.status == 500 else { return nil }
            return response.text.range(of: #"<errorCode>\d+</errorCode>"#, options: .regularExpression).map {
                String(response.text[$0].dropFirst(11).dropLast(12))
            }
        }

        @Test func hostileRequestsAreRefusedAndTheDaemonServesOn() throws {
            let (daemon, json) = try renderer(try freeUDPPort(), extra: "max_subscribers = 3\n")
            let port = try httpPort(daemon)

            let description = try #require(try WebClient(port: port).request("GET", "/upnp/description.xml"))
            #expect(description.status == 200)
            #expect(description.text.contains("urn:schemas-upnp-org:device:MediaRenderer:1"))
            // Another name (DNS rebinding), a browser's request, and anything but the renderer's paths.
            #expect(try WebClient(port: port).request("GET", "/upnp/description.xml", headers: ["Host": "evil.example"])?.status == 403)
            #expect(
                try WebClient(port: port).request("GET", "/upnp/description.xml", headers: ["Origin": "http://evil.example"])?.status
                    == 403)
            #expect(try WebClient(port: port).request("GET", "/etc/passwd")?.status == 404)

            // A body past 64 KiB is refused before it is read.
            let big = try WebClient(port: port)
            big.send("POST /upnp/control/AVTransport HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 70000\r\n\r\n")
            #expect(try big.response()?.status == 413)

            // Billion laughs, an unknown action, missing arguments, a file and a bad instance.
            let laughs =
                #"<?xml version="1.0"?><!DOCTYPE l [<!ENTITY l "lol"><!ENTITY l2 "&l;&l;&l;&l;&l;&l;&l;&l;&l;&l;">"#
                + #"<!ENTITY l3 "&l2;&l2;&l2;&l2;&l2;&l2;&l2;&l2;&l2;&l2;">]><s:Envelope><s:Body><u:Play>&l3;</u:Play></s:Body></s:Envelope>"#
            let bomb = try WebClient(port: port).request(
                "POST", "/upnp/control/AVTransport", headers: ["SOAPACTION": "\"urn:schemas-upnp-org:service:AVTransport:1#Play\""],
                body: Array(laughs.utf8))
            #expect(errorCode(bomb) == "402")
            #expect(errorCode(try soap(port, "AVTransport", "Dance", "<InstanceID>0</InstanceID>")) == "401")
            #expect(errorCode(try soap(port, "AVTransport", "Seek", "<InstanceID>0</InstanceID>")) == "402")
            #expect(errorCode(try soap(port, "AVTransport", "Pause", "<InstanceID>7</InstanceID>")) == "718")
            let file = "<InstanceID>0</InstanceID><CurrentURI>file:///etc/passwd</CurrentURI><CurrentURIMetaData></CurrentURIMetaData>"
            #expect(errorCode(try soap(port, "AVTransport", "SetAVTransportURI", file)) == "716")
            let badMetadata =
                "<InstanceID>0</InstanceID><CurrentURI>http://127.0.0.1:9/a.flac</CurrentURI><CurrentURIMetaData>&lt;DIDL-Lite&gt;</CurrentURIMetaData>"
            #expect(errorCode(try soap(port, "AVTransport", "SetAVTransportURI", badMetadata)) == "402")
            // With no cast, Stop changes nothing and succeeds (Home Assistant sends it first).
            #expect(try soap(port, "AVTransport", "Stop", "<InstanceID>0</InstanceID>")?.status == 200)
            #expect(try #require(json.call("status").result)["source"] as? String == "queue")

            // A callback elsewhere is refused; subscriptions are capped.
            let elsewhere = try WebClient(port: port).request(
                "SUBSCRIBE", "/upnp/event/RenderingControl",
                headers: ["CALLBACK": "<http://192.0.2.1:80/>", "NT": "upnp:event", "TIMEOUT": "Second-300"])
            #expect(elsewhere?.status == 412)
            // A subscriber whose callback never answers (nothing listens there).
            let dead = try freeUDPPort()
            var sids: [String] = []
            for _ in 0..<3 {
                let answer = try WebClient(port: port).request(
                    "SUBSCRIBE", "/upnp/event/RenderingControl",
                    headers: ["CALLBACK": "<http://127.0.0.1:\(dead)/>", "NT": "upnp:event", "TIMEOUT": "Second-300"])
                #expect(answer?.status == 200)
                #expect(answer?.headers["timeout"] == "Second-300")
                if let sid = answer?.headers["sid"] { sids.append(sid) }
            }
            #expect(
                try WebClient(port: port).request(
                    "SUBSCRIBE", "/upnp/event/RenderingControl",
                    headers: ["CALLBACK": "<http://127.0.0.1:\(dead)/>", "NT": "upnp:event"])?.status == 503)
            // Their NOTIFYs fail (the initial one, then a change's): they are dropped, and the
            // daemon answered meanwhile as ever.
            usleep(300_000)
            _ = try json.call("volume", ["level": 50])
            let deadline = Date().addingTimeInterval(5)
            var renewed: Int? = 200
            while Date() < deadline {
                renewed = try WebClient(port: port).request(
                    "SUBSCRIBE", "/upnp/event/RenderingControl", headers: ["SID": sids[0], "TIMEOUT": "Second-300"])?.status
                if renewed == 412 { break }
                usleep(100_000)
            }
            #expect(renewed == 412, "a subscriber that does not answer is dropped")
            #expect(try #require(json.call("status").result)["volume"] as? Int == 50)
            #expect(daemon.process.isRunning)
        }

        /// As a second machine sees it: the renderer on this machine's real interface (not
        /// loopback), its `ssdp:alive` heard on the multicast group, and a multicast M-SEARCH from
        /// that interface answered with a LOCATION there, where the description is served.
        @Test func aSearchOnTheRealInterfaceFindsItAndItsAnnouncementsAreHeard() throws {
            let interface = try #require(realInterface(), "this machine has an IPv4 interface besides loopback")
            // Listens on the SSDP group from before the daemon starts, for its alive announcements.
            let listen = """
                import socket, struct, sys, time
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
                s.bind(("", 1900))
                s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, struct.pack("4s4s", socket.inet_aton("239.255.255.250"), socket.inet_aton(sys.argv[1])))
                s.settimeout(0.5)
                end = time.time() + float(sys.argv[2])
                while time.time() < end:
                    try:
                        data, _ = s.recvfrom(4096)
                    except socket.timeout:
                        continue
                    if data.startswith(b"NOTIFY") and b"ssdp:alive" in data and b"MediaRenderer" in data:
                        print(data.decode(errors="replace").replace("\\r\\n", " | "), flush=True)
                """
            let listener = Process()
            listener.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
            listener.arguments = ["-c", listen, interface.address, "6"]
            let heard = Pipe()
            listener.standardOutput = heard
            try listener.run()
            defer { if listener.isRunning { kill(listener.processIdentifier, SIGKILL) } }
            usleep(500_000)

            let config = try TemporaryDirectory()
            let path = config.path("tonearmd.toml")
            try "[upnp]\nenabled = true\nname = \"Real Room\"\n".write(toFile: path, atomically: true, encoding: .utf8)
            let daemon = try DaemonProcess(arguments: ["--device", "null", "--pace", "--config", path])
            _ = try daemon.connect()

            let report = try controlPoint([
                "--multicast", interface.address, "--scenario", "discover", "--timeout", "30",
            ])
            #expect(report["ok"] as? Bool == true, "\(report["error"] ?? "")")
            #expect(report["is_dmr"] as? Bool == true)
            #expect(report["friendly_name"] as? String == "Real Room")
            let locations = report["locations"] as? [String] ?? []
            #expect(locations.contains { $0.hasPrefix("http://\(interface.address):") }, "\(locations)")
            #expect(!locations.contains { $0.contains("127.0.0.1") })

            listener.waitUntilExit()
            let announcements = String(decoding: heard.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            #expect(announcements.contains("LOCATION: http://\(interface.address):"), "\(announcements)")
            #expect(announcements.contains("BOOTID.UPNP.ORG: 1"))
        }

        /// Debian's minidlna as the real media server: its content browsed with the control
        /// point's own DMS client, and two of its files cast as Home Assistant casts a media
        /// source's items (the server's DIDL-Lite as metadata), the second as the next URI. The
        /// PCM the device received is the source's, sample for sample, across the join.
        @Test func aGaplessPairFromMinidlnaIsHeardSampleForSample() throws {
            let interface = try #require(realInterface(), "this machine has an IPv4 interface besides loopback")
            let work = try TemporaryDirectory()
            defer { work.remove() }
            let media = work.path("media")
            try FileManager.default.createDirectory(atPath: media, withIntermediateDirectories: true)
            let pcm = try Fixtures.wavPCM("tone.wav")
            let cut = 37817 * 4
            try wavFile(pcm: pcm.subdata(in: 0..<cut)).write(to: URL(fileURLWithPath: media + "/part1.wav"))
            try wavFile(pcm: pcm.subdata(in: cut..<pcm.count)).write(to: URL(fileURLWithPath: media + "/part2.wav"))

            let port = try freeTCPPort()
            for directory in ["db", "log"] {
                try FileManager.default.createDirectory(atPath: work.path(directory), withIntermediateDirectories: true)
            }
            try """
            media_dir=A,\(media)
            db_dir=\(work.path("db"))
            log_dir=\(work.path("log"))
            port=\(port)
            network_interface=\(interface.name)
            inotify=no
            friendly_name=Test DMS
            """.write(toFile: work.path("minidlna.conf"), atomically: true, encoding: .utf8)
            let server = Process()
            server.executableURL = URL(fileURLWithPath: "/usr/sbin/minidlnad")
            server.arguments = ["-d", "-f", work.path("minidlna.conf"), "-P", work.path("minidlna.pid")]
            _ = FileManager.default.createFile(atPath: work.path("minidlna.out"), contents: nil)
            let serverLog = try FileHandle(forWritingTo: URL(fileURLWithPath: work.path("minidlna.out")))
            defer { try? serverLog.close() }
            server.standardOutput = serverLog
            server.standardError = serverLog
            try server.run()
            defer {
                // SIGKILL: it inherits the test thread's blocked signals, SIGTERM among them.
                if server.isRunning { kill(server.processIdentifier, SIGKILL) }
                server.waitUntilExit()
            }
            var scanned = false
            for _ in 0..<200 {
                let log = String(decoding: readWholeFile(work.path("minidlna.out")), as: UTF8.self)
                if log.contains("Scanning \(media) finished") {
                    scanned = true
                    break
                }
                usleep(50_000)
            }
            #expect(scanned, "minidlna scanned its media directory")

            try "#!/bin/sh\nexec cat >> '\(work.path("out.raw"))'\n".write(
                toFile: work.path("capture.sh"), atomically: true, encoding: .utf8)
            let ssdp = try freeUDPPort()
            let config = work.path("tonearmd.toml")
            try "[upnp]\nenabled = true\ninterfaces = [\"lo\"]\nssdp_port = \(ssdp)\n".write(
                toFile: config, atomically: true, encoding: .utf8)
            let daemon = try DaemonProcess(arguments: [
                "--device", "file:'|sh \(work.path("capture.sh"))',raw", "--pace", "--config", config,
            ])
            _ = try daemon.connect()

            let report = try controlPoint([
                "--scenario", "dms", "--server", "http://\(interface.address):\(port)/rootDesc.xml", "--search", "127.0.0.1:\(ssdp)",
                "--media-title", "part1", "--next-title", "part2", "--control", daemon.socketPath, "--timeout", "60",
            ])
            #expect(report["ok"] as? Bool == true, "\(report["error"] ?? "") failures: \(report["failures"] ?? "")")
            let states = report["states"] as? [String: [String: Any]] ?? [:]
            #expect(states["playing"]?["source"] as? String == "upnp")
            #expect(states["stopped"]?["source"] as? String == "queue")

            // What the device received: both parts, joined with no gap and no overlap.
            let captured = settledFile(work.path("out.raw"))
            #expect(captured.count == pcm.count)
            #expect(Data(captured) == pcm, "minidlna's two files join into the uncut signal")
        }

        /// A cover that is not an image is never served (a page from the control point's server
        /// would run as the web remote's own), and one the daemon may not fetch is left out.
        @Test func aCoverThatIsNotAnImageIsNotServed() throws {
            let scratch = try TemporaryDirectory()
            defer { scratch.remove() }
            let page = scratch.path("page.html")
            try "<html><script>alert(1)</script></html>".write(toFile: page, atomically: true, encoding: .utf8)
            let media = try TestHTTPServer()
            defer { media.stop() }
            media.route("/tone.flac", .file(path: Fixtures.path("tone.flac"), contentType: "audio/flac"))
            media.route("/page", .file(path: page, contentType: "image/png"))
            let webPort = try freeTCPPort()
            let (daemon, json) = try renderer(try freeUDPPort(), webPort: webPort)
            let port = try httpPort(daemon)
            func castWithCover(_ cover: String) throws {
                let didl =
                    #"<DIDL-Lite xmlns="urn:schemas-upnp-org:metadata-1-0/DIDL-Lite/" xmlns:dc="http://purl.org/dc/elements/1.1/" "#
                    + #"xmlns:upnp="urn:schemas-upnp-org:metadata-1-0/upnp/"><item id="0" parentID="-1" restricted="1">"#
                    + "<dc:title>Covered</dc:title><upnp:albumArtURI>\(cover)</upnp:albumArtURI></item></DIDL-Lite>"
                let escaped = didl.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
                    .replacingOccurrences(of: ">", with: "&gt;")
                let set = try soap(
                    port, "AVTransport", "SetAVTransportURI",
                    "<InstanceID>0</InstanceID><CurrentURI>\(media.url("/tone.flac"))</CurrentURI><CurrentURIMetaData>\(escaped)</CurrentURIMetaData>"
                )
                #expect(set?.status == 200, "\(set?.text ?? "")")
            }

            try castWithCover(media.url("/page"))
            let status = try #require(json.call("status").result)
            #expect(status["cover_url"] as? String == media.url("/page"))
            let current = try #require(status["current"] as? Int)
            let art = try #require(try WebClient(port: webPort).request("GET", "/art/\(current)"))
            #expect(art.status == 404 && !art.text.contains("<script"), "\(art.status) \(art.text)")
            #expect(art.text.contains("not a JPEG, PNG, GIF or WebP image"), "\(art.text)")

            try castWithCover("file:///etc/passwd")
            let after = try #require(json.call("status").result)
            #expect(after["cover_url"] == nil, "\(after)")
            #expect(daemon.log.contains("the cover a control point names is left out"))
            #expect(daemon.process.isRunning)
        }

        /// A house queue of two items, the second paused about 1 s in: its ids and where it stands.
        private func houseQueue(_ json: LineClient) throws -> (ids: [Int], position: Double) {
            _ = try json.call("add", ["urls": [Fixtures.path("tone.wav"), Fixtures.path("tone.flac")]])
            let queued = try #require(json.call("queue").result)
            let ids = try #require((queued["items"] as? [[String: Any]])?.compactMap { $0["id"] as? Int })
            _ = try json.call("play", ["id": ids[1]])
            _ = try json.call("seek", ["position": 1.0])
            _ = try json.call("pause")
            let status = try #require(json.call("status").result)
            return (ids, status["position"] as? Double ?? -1)
        }

        private func cast(_ port: Int, _ url: String) throws {
            let set = try soap(
                port, "AVTransport", "SetAVTransportURI",
                "<InstanceID>0</InstanceID><CurrentURI>\(url)</CurrentURI><CurrentURIMetaData></CurrentURIMetaData>")
            #expect(set?.status == 200, "\(set?.text ?? "")")
            #expect(try soap(port, "AVTransport", "Play", "<InstanceID>0</InstanceID><Speed>1</Speed>")?.status == 200)
        }

        private func expectGivenBack(_ json: LineClient, _ house: (ids: [Int], position: Double)) throws {
            let back = try waitForStatus(json, timeout: 10) { $0["source"] as? String == "queue" && $0.name == "paused" }
            #expect(back["current"] as? Int == house.ids[1])
            #expect(abs((back["position"] as? Double ?? 0) - house.position) < 0.05, "stood at \(house.position): \(back)")
            let queue = try #require(json.call("queue").result)
            #expect((queue["items"] as? [[String: Any]])?.compactMap { $0["id"] as? Int } == house.ids)
        }

        /// A cast's queue set aside survives a crash: the next start gives it back, paused where
        /// it stood.
        @Test func aCrashDuringACastGivesTheQueueBackAtTheNextStart() throws {
            let media = try TestHTTPServer()
            defer { media.stop() }
            media.route("/tone.flac", .file(path: Fixtures.path("tone.flac"), contentType: "audio/flac"))
            let state = try TemporaryDirectory()
            defer { state.remove() }
            let environment = ["STATE_DIRECTORY": state.path("state")]
            let ssdp = try freeUDPPort()
            var (daemon, json) = try renderer(ssdp, environment: environment)
            let house = try houseQueue(json)
            try cast(try httpPort(daemon), media.url("/tone.flac"))
            _ = try waitForStatus(json, timeout: 10) { $0.name == "playing" && $0["source"] as? String == "upnp" }
            // The user's choice during the cast is for the queue set aside, and kept with it.
            let options = try #require(json.call("options", ["repeat": true]).result)
            #expect(options["repeat"] as? Bool == true, "\(options)")
            kill(daemon.process.processIdentifier, SIGKILL)
            daemon.process.waitUntilExit()

            (daemon, json) = try renderer(ssdp, environment: environment)
            try expectGivenBack(json, house)
            #expect(try json.call("queue").result?["repeat"] as? Bool == true, "the option chosen during the cast came back")
            #expect(!FileManager.default.fileExists(atPath: state.path("state/cast-aside.json")))
        }

        /// A local command ends a cast; queue edits meanwhile are refused with words; a cast no
        /// control point touches ends after upnp.release_after_s.
        @Test func aLocalPlayOrQuietEndsTheCastAndEditsWaitForIt() throws {
            let media = try TestHTTPServer()
            defer { media.stop() }
            media.route("/tone.flac", .file(path: Fixtures.path("tone.flac"), contentType: "audio/flac"))
            let (daemon, json) = try renderer(try freeUDPPort(), extra: "release_after_s = 2\n")
            let port = try httpPort(daemon)
            let house = try houseQueue(json)

            try cast(port, media.url("/tone.flac"))
            _ = try waitForStatus(json, timeout: 10) { $0["source"] as? String == "upnp" }
            let refused = try json.call("add", ["urls": [Fixtures.path("tone.mp3")]])
            #expect(refused.errorCode == -32602)
            #expect("\(refused)".contains("cast"), "\(refused)")
            // A local play: the queue comes back, then plays.
            _ = try json.call("play")
            let playing = try waitForStatus(json, timeout: 10) { $0.name == "playing" }
            #expect(playing["source"] as? String == "queue")
            #expect(playing["current"] as? Int == house.ids[1])
            _ = try json.call("pause")
            let paused = try #require(json.call("status").result)
            let stood = (ids: house.ids, position: paused["position"] as? Double ?? -1)

            // A cast nobody touches (no subscription, no action) ends by itself.
            try cast(port, media.url("/tone.flac"))
            _ = try waitForStatus(json, timeout: 10) { $0["source"] as? String == "upnp" }
            _ = try soap(port, "AVTransport", "Pause", "<InstanceID>0</InstanceID>")
            try expectGivenBack(json, stood)
        }

        /// A cast that plays is not released however long nobody touches it; once it stops
        /// playing, it is, after `release_after_s`.
        @Test func aPlayingCastIsKeptAndAPausedOneReleased() throws {
            let scratch = try TemporaryDirectory()
            defer { scratch.remove() }
            let stream = scratch.path("radio.mp3")
            let made = try runTool(
                "/usr/bin/ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "sine=f=440", "-t", "30", stream], timeout: 60)
            try #require(made.status == 0, "\(made.output)")
            let media = try TestHTTPServer()
            defer { media.stop() }
            media.route("/radio", .live(path: stream, contentType: "audio/mpeg", bytesPerSecond: 16_000))
            let (daemon, json) = try renderer(try freeUDPPort(), extra: "release_after_s = 1\n")
            let port = try httpPort(daemon)
            let house = try houseQueue(json)
            try cast(port, media.url("/radio"))
            #expect(errorCode(try soap(port, "AVTransport", "Play", "<InstanceID>0</InstanceID><Speed>1</Speed>")) == nil)
            _ = try waitForStatus(json, timeout: 10) { $0.name == "playing" && $0["source"] as? String == "upnp" }
            usleep(2_500_000)
            let still = try #require(json.call("status").result)
            #expect(still.name == "playing" && still["source"] as? String == "upnp", "kept while it plays: \(still)")
            let paused = Date()
            _ = try soap(port, "AVTransport", "Pause", "<InstanceID>0</InstanceID>")
            try expectGivenBack(json, house)
            #expect(Date().timeIntervalSince(paused) >= 0.9, "released release_after_s after it stopped playing")
        }

        /// An M-SEARCH flood costs bounded work: answers are rationed (at most 40 a second, 64
        /// waiting), and the daemon serves on.
        @Test func anMSearchFloodGetsRationedAnswers() throws {
            let ssdp = try freeUDPPort()
            let (daemon, json) = try renderer(ssdp)
            _ = try httpPort(daemon)
            let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
            defer { close(fd) }
            var timeout = timeval(tv_sec: 0, tv_usec: 200_000)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var target = sockaddr_in()
            target.sin_family = sa_family_t(AF_INET)
            target.sin_port = in_port_t(UInt16(ssdp).bigEndian)
            target.sin_addr.s_addr = inet_addr("127.0.0.1")
            let search = Array(
                "M-SEARCH * HTTP/1.1\r\nHOST: 239.255.255.250:1900\r\nMAN: \"ssdp:discover\"\r\nMX: 1\r\nST: ssdp:all\r\n\r\n".utf8)
            let rss = { () -> Int in
                let status = (try? String(contentsOfFile: "/proc/\(daemon.process.processIdentifier)/status", encoding: .utf8)) ?? ""
                let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
                return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
            }
            /// 5000 searches at once; the answers heard in the next 3 s, and how long that took.
            func flood() -> (answers: Int, seconds: Double) {
                let started = Date()
                for _ in 0..<5000 {
                    _ = withUnsafePointer(to: &target) {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                            sendto(fd, search, search.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                        }
                    }
                }
                var answers = 0
                var buffer = [UInt8](repeating: 0, count: 2048)
                let deadline = Date().addingTimeInterval(3)
                while Date() < deadline {
                    if recv(fd, &buffer, buffer.count, 0) > 0 { answers += 1 }
                }
                return (answers, Date().timeIntervalSince(started))
            }
            // The first flood warms up what any busy daemon allocates once; a second costs nothing more.
            let first = flood()
            let warm = rss()
            let second = flood()
            for (answers, seconds) in [first, second] {
                #expect(answers > 0, "searches are answered")
                #expect(Double(answers) <= 40 + 40 * seconds, "\(answers) answers in \(seconds) s")
            }
            // A sanitizer holds freed memory back (ASan's quarantine, TSan's shadow): RSS says nothing there.
            if Sanitizer.active == nil {
                #expect(rss() - warm < 2048, "RSS grew \(rss() - warm) KiB in the second flood")
            }
            #expect(try #require(json.call("status").result)["state"] != nil)
        }
    }
}
