import Foundation
import Testing
import TonearmTestSupport

#if canImport(Glibc)
    import Glibc
#endif

extension DaemonTests {
    /// What a station can do to the box (the outside passes' issue, §1-§3): https is verified, a
    /// redirect is followed only to an address of an allowed protocol, and a network source
    /// never opens a local file. Real https servers on loopback (Python's, with certificates made
    /// here by openssl), the real daemon.
    @Suite("Daemon trusts stations only so far", .serialized, .realDaemon(minutes: 3))
    struct DaemonTLSTests {
        /// A test authority and three certificates: one it signed for 127.0.0.1, one it signed
        /// for another host, and one self-signed for 127.0.0.1.
        final class Certificates {
            let directory: TemporaryDirectory
            var ca: String { directory.path("ca.pem") }

            init() throws {
                directory = try TemporaryDirectory()
                try openssl([
                    "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
                    "-days", "2", "-subj", "/CN=Tonearm Test CA",
                ])
                try sign("good", subjectAltName: "IP:127.0.0.1")
                try sign("other", subjectAltName: "DNS:not-this-host.invalid")
                try openssl([
                    "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "self.key", "-out", "self.pem",
                    "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                ])
            }

            private func sign(_ name: String, subjectAltName: String) throws {
                try openssl([
                    "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "\(name).key", "-out", "\(name).csr",
                    "-subj", "/CN=\(name)",
                ])
                try "subjectAltName=\(subjectAltName)\n".write(toFile: directory.path("\(name).ext"), atomically: true, encoding: .utf8)
                try openssl([
                    "x509", "-req", "-in", "\(name).csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                    "-out", "\(name).pem", "-days", "2", "-extfile", "\(name).ext",
                ])
            }

            private func openssl(_ arguments: [String]) throws {
                let result = try runTool(
                    "/usr/bin/env", ["sh", "-c", "cd '\(directory.url.path)' && openssl \"$@\"", "openssl"] + arguments,
                    timeout: 60)
                guard result.status == 0 else { throw LineClient.Failure(description: "openssl \(arguments): \(result.output)") }
            }

            deinit { directory.remove() }
        }

        /// `Tests/Scripts/tls_server.py` serving the fixtures with certificate `name`.
        final class TLSServer {
            let process = Process()
            let port: Int

            init(_ certificates: Certificates, _ name: String, serving directory: String = Fixtures.directory.path) throws {
                let script = Fixtures.directory.deletingLastPathComponent().appendingPathComponent("Scripts/tls_server.py").path
                process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
                process.arguments = [
                    script, certificates.directory.path("\(name).pem"), certificates.directory.path("\(name).key"),
                    directory,
                ]
                let output = Pipe()
                process.standardOutput = output
                try process.run()
                let line = output.fileHandleForReading.availableLine(timeout: 10)
                guard let port = line.flatMap({ Int($0) }) else {
                    process.terminate()
                    throw LineClient.Failure(description: "the TLS server did not start: \(line ?? "nothing")")
                }
                self.port = port
            }

            func url(_ path: String) -> String { "https://127.0.0.1:\(port)\(path)" }

            deinit {
                if process.isRunning { kill(process.processIdentifier, SIGKILL) }
                process.waitUntilExit()
            }
        }

        private func daemon(_ dir: TemporaryDirectory, input: String) throws -> (DaemonProcess, LineClient) {
            let config = dir.path("tonearmd.toml")
            try "[input]\ntimeout_ms = 3000\n\(input)\n".write(toFile: config, atomically: true, encoding: .utf8)
            let daemon = try DaemonProcess(arguments: ["--config", config, "--device", dir.fileDevice("out.raw")])
            return (daemon, try daemon.connect())
        }

        /// §1: a self-signed certificate, one for another host and one of an authority not
        /// trusted are refused with `tls`, naming the host; the test authority, once trusted
        /// through `input.ca_file`, is accepted and the file plays to the sample.
        @Test func httpsIsVerified() throws {
            let certificates = try Certificates()
            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            let selfSigned = try TLSServer(certificates, "self")
            let otherHost = try TLSServer(certificates, "other")
            let good = try TLSServer(certificates, "good")

            // The system's store: none of them is trusted.
            var (daemon, client) = try daemon(dir, input: "")
            for server in [selfSigned, otherHost, good] {
                let load = try client.call("load", ["url": server.url("/tone.wav")], timeout: 15)
                #expect(load.errorData?["kind"] as? String == "tls", "\(load)")
                #expect(load.errorMessage?.contains("127.0.0.1") == true, "\(load)")
            }
            #expect(daemon.terminate() == 0)

            // The test authority trusted: its certificate for this host plays; the others do not.
            (daemon, client) = try self.daemon(dir, input: "ca_file = \"\(certificates.ca)\"")
            #expect(try client.call("load", ["url": selfSigned.url("/tone.wav")], timeout: 15).errorData?["kind"] as? String == "tls")
            #expect(try client.call("load", ["url": otherHost.url("/tone.wav")], timeout: 15).errorData?["kind"] as? String == "tls")
            #expect(try client.call("load", ["url": good.url("/tone.wav")], timeout: 15).stateName == "ready")
            #expect(try client.call("play").stateName == "playing")
            // What came over the verified connection is the file's audio, from its first sample.
            _ = try waitForStatus(client, timeout: 20) { ($0["position"] as? Double ?? 0) > 0.5 }
            let heard = Data(readWholeFile(dir.path("out.raw")))
            let source = try Fixtures.wavPCM("tone.wav")
            #expect(heard.count > 44_100 && heard.count <= source.count && heard == source.prefix(heard.count), "\(heard.count) bytes")
            #expect(daemon.terminate() == 0)

            // Checking turned off, as documented: a self-signed server plays.
            (daemon, client) = try self.daemon(dir, input: "tls_verify = false")
            #expect(try client.call("load", ["url": selfSigned.url("/tone.wav")], timeout: 15).stateName == "ready")
        }

        /// §2: with https only, a redirect to an address that cannot be parsed (a second port)
        /// is refused, as is one to plain http, and neither request is sent.
        @Test func aRedirectIsFollowedOnlyToAnAllowedAddress() throws {
            let certificates = try Certificates()
            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            let good = try TLSServer(certificates, "good")
            let plain = try TestHTTPServer()
            defer { plain.stop() }
            plain.route("/odd.wav", .file(path: Fixtures.path("tone.wav"), contentType: "audio/wav"))
            let (daemon, client) = try daemon(dir, input: "protocols = [\"file\", \"https\"]\nca_file = \"\(certificates.ca)\"")
            defer { withExtendedLifetime(daemon) {} }
            for target in ["http://127.0.0.1:\(plain.port):1/odd.wav", "http://127.0.0.1:\(plain.port)/odd.wav"] {
                let url = good.url("/redirect?to=" + (target.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? target))
                let load = try client.call("load", ["url": url], timeout: 15)
                #expect(load.errorData?["kind"] as? String == "permission_denied", "\(target): \(load)")
            }
            #expect(readWholeFile(dir.path("out.raw")).isEmpty, "nothing of the plain-http file was played")
            // Refused before it was sent: FFmpeg's http follows redirects itself, and used to
            // send the plain-http request even when the redirect was refused afterwards.
            #expect(plain.requests.isEmpty, "no request reached the plain-http server (\(plain.requests.count) did)")
        }

        /// §1: an https HLS playlist on a verified server whose segments are on a server that
        /// cannot be verified (self-signed): the segments are refused, nothing of them plays.
        @Test func anHLSStreamsSegmentsAreVerifiedToo() throws {
            let certificates = try Certificates()
            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            let served = dir.path("served")
            try FileManager.default.createDirectory(atPath: served, withIntermediateDirectories: true)
            let made = try runTool(
                "/usr/bin/ffmpeg",
                [
                    "-v", "error", "-y", "-i", Fixtures.path("tone.wav"), "-c:a", "aac", "-f", "hls",
                    "-hls_time", "1", "-hls_playlist_type", "vod", served + "/index.m3u8",
                ], timeout: 60)
            #expect(made.status == 0, "\(made.output)")
            let selfSigned = try TLSServer(certificates, "self", serving: served)
            let good = try TLSServer(certificates, "good", serving: served)
            // The playlist on the good server; its segments on the self-signed one.
            let index = try String(contentsOfFile: served + "/index.m3u8", encoding: .utf8)
            let redirected = index.split(separator: "\n").map { $0.hasSuffix(".ts") ? selfSigned.url("/" + $0) : String($0) }
            try redirected.joined(separator: "\n").write(toFile: served + "/mixed.m3u8", atomically: true, encoding: .utf8)
            let (daemon, client) = try daemon(dir, input: "ca_file = \"\(certificates.ca)\"")
            defer { withExtendedLifetime(daemon) {} }
            #expect(
                try client.call("load", ["url": good.url("/index.m3u8")], timeout: 15).stateName == "ready",
                "the verified server's own segments play")
            let load = try client.call("load", ["url": good.url("/mixed.m3u8"), "play": true], timeout: 15)
            if load.stateName == "playing" {
                _ = try waitForStatus(client, timeout: 20) { ["ended", "failed", "idle"].contains($0.name ?? "") }
            }
            #expect(readWholeFile(dir.path("out.raw")).isEmpty, "nothing from the unverified server was played: \(load)")
            #expect(try client.call("ping")["result"] as? String == "pong")
        }

        /// §3: an HLS playlist served over http that names a local file does not play it.
        @Test func aStationCannotOpenALocalFile() throws {
            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            let secret = dir.path("secret.mp3")
            try FileManager.default.copyItem(atPath: Fixtures.path("tone.mp3"), toPath: secret)
            let playlist = dir.path("station.m3u8")
            try "#EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXTINF:3.0,\nfile://\(secret)\n#EXT-X-ENDLIST\n"
                .write(toFile: playlist, atomically: true, encoding: .utf8)
            let server = try TestHTTPServer()
            defer { server.stop() }
            server.route("/station.m3u8", .file(path: playlist, contentType: "application/vnd.apple.mpegurl"))
            let (daemon, client) = try daemon(dir, input: "")
            defer { withExtendedLifetime(daemon) {} }
            let load = try client.call("load", ["url": server.url("/station.m3u8"), "play": true], timeout: 15)
            #expect(load.errorData != nil, "the station's playlist did not open the local file: \(load)")
            if load.stateName == "playing" {
                _ = try waitForStatus(client, timeout: 20) { ["ended", "failed", "idle"].contains($0.name ?? "") }
            }
            #expect(readWholeFile(dir.path("out.raw")).isEmpty, "nothing of the local file was played")
            #expect(try client.call("ping")["result"] as? String == "pong")
        }
    }
}

extension FileHandle {
    /// The first line this handle gives within `timeout` seconds (tests only).
    func availableLine(timeout: Double) -> String? {
        let deadline = Date().addingTimeInterval(timeout)
        var bytes: [UInt8] = []
        var pollDescriptor = pollfd(fd: fileDescriptor, events: Int16(POLLIN), revents: 0)
        while Date() < deadline {
            guard poll(&pollDescriptor, 1, 100) > 0 else { continue }
            var byte: UInt8 = 0
            guard Glibc.read(fileDescriptor, &byte, 1) == 1 else { return nil }
            if byte == UInt8(ascii: "\n") { return String(decoding: bytes, as: UTF8.self) }
            bytes.append(byte)
        }
        return nil
    }
}
