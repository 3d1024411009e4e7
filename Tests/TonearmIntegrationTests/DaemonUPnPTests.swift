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
        /// A UDP port nobody uses now, for a daemon's own SSDP socket (1900 is the network's).
        private func freeUDPPort() throws -> Int {
            let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
            defer { close(fd) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let bound = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
            }
            guard bound else { throw LineClient.Failure(description: "no free UDP port") }
            return Int(UInt16(bigEndian: address.sin_port))
        }

        private func renderer(_ ssdpPort: Int, extra: String = "") throws -> (DaemonProcess, LineClient) {
            let config = try TemporaryDirectory()
            let path = config.path("tonearmd.toml")
            try "[upnp]\nenabled = true\ninterfaces = [\"lo\"]\nssdp_port = \(ssdpPort)\nname = \"Test Room\"\n\(extra)"
                .write(toFile: path, atomically: true, encoding: .utf8)
            let daemon = try DaemonProcess(arguments: ["--device", "null", "--pace", "--config", path])
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
            let ssdp = try freeUDPPort()
            let (daemon, json) = try renderer(ssdp)

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
                "--title", "Cast tone", "--control", daemon.socketPath, "--timeout", "60",
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
    }
}
