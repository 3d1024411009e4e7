import Foundation
import Testing
import TonearmTestSupport

#if canImport(Glibc)
    import Glibc
#endif

extension DaemonTests {
    /// A playlist a client names is checked on the file actually opened (the other defects
    /// issue's §5 and §7): a read-only peer cannot read a file it could not read itself through a
    /// playlist link, and a link that flips between the check and the read changes nothing.
    @Suite("Daemon reads files for a client as the client could", .serialized, .realDaemon(minutes: 3, alone: true))
    struct DaemonFileAccessTests {
        /// Runs a few MPD commands as `uid` through a small Python client; returns what came back.
        private func mpd(as uid: Int, _ socket: String, _ commands: [String]) throws -> String {
            let script = """
                import socket, sys
                s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.settimeout(5)
                f = s.makefile('rwb'); f.readline()
                for line in sys.argv[2:]:
                    f.write(line.encode() + b'\\n'); f.flush()
                    while True:
                        reply = f.readline().decode()
                        print(reply.rstrip())
                        if reply.startswith('OK') or reply.startswith('ACK') or not reply: break
                """
            let result = try runTool(
                "/usr/bin/setpriv",
                [
                    "--reuid=\(uid)", "--regid=\(uid)", "--clear-groups",
                    "/usr/bin/python3", "-c", script, socket,
                ] + commands, timeout: 20)
            return result.output
        }

        /// §5: a read-only peer's `listplaylist` of a link to a file only root may read gets an
        /// error and not a line of it; a playlist anyone may read still lists.
        /// A directory anyone may enter holding `secret.txt` (`text`, mode 0600: only root may read
        /// it), made by `prepare`, and a daemon whose MPD socket uid 65534 may use read-only. Nil
        /// (the test recorded as skipped) when not root: a peer of another uid needs root.
        private func peerRig(
            secret text: String, _ prepare: (TemporaryDirectory, String) throws -> Void,
            _ body: (TemporaryDirectory, DaemonProcess) throws -> Void
        ) throws {
            guard geteuid() == 0 else {
                Issue.record("skipped: a peer of another uid needs root")
                return
            }
            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            #expect(chmod(dir.url.path, 0o755) == 0)
            let secret = dir.path("secret.txt")
            try text.write(toFile: secret, atomically: false, encoding: .utf8)
            #expect(chmod(secret, 0o600) == 0)
            try prepare(dir, secret)
            let config = dir.path("tonearmd.toml")
            try "[control]\nsocket_mode = \"0666\"\nread_gids = [65534]\n".write(toFile: config, atomically: true, encoding: .utf8)
            let daemon = try DaemonProcess(arguments: ["--device", "null", "--config", config])
            defer { withExtendedLifetime(daemon) {} }
            _ = try daemon.connect()
            #expect(chmod(daemon.directory.url.path, 0o755) == 0)
            try body(dir, daemon)
        }

        @Test func aPeerCannotReadThroughAPlaylistWhatItCouldNotReadItself() throws {
            try peerRig(
                secret: "/SECRET-LINE-ONE.flac\n/SECRET-LINE-TWO.flac\n",
                { dir, secret in
                    #expect(symlink(secret, dir.path("x.m3u")) == 0)
                    try "/music/anyone.flac\n".write(toFile: dir.path("open.m3u"), atomically: false, encoding: .utf8)
                    #expect(chmod(dir.path("open.m3u"), 0o644) == 0)
                }
            ) { dir, daemon in
                let refused = try mpd(as: 65534, daemon.mpdSocketPath, ["listplaylist \"\(dir.path("x.m3u"))\""])
                #expect(refused.contains("ACK"), "\(refused)")
                #expect(!refused.contains("SECRET"), "the secret's lines never come back: \(refused)")
                let listed = try mpd(as: 65534, daemon.mpdSocketPath, ["listplaylist \"\(dir.path("open.m3u"))\""])
                #expect(listed.contains("file: /music/anyone.flac"), "\(listed)")
                // Root (a controlling peer) may, as MPD lets the daemon's own user.
                let mpd = try daemon.connectMPD()
                #expect(try mpd.command("listplaylist \"\(dir.path("x.m3u"))\"").values("file").count == 2)
            }
        }

        /// A cover image is a file a client names too: `albumart` of a song outside the music
        /// directory whose `cover.jpg` links to a file only root may read is refused, without a
        /// byte of it; a cover anyone may read is sent.
        @Test func aPeerCannotReadThroughACoverLinkWhatItCouldNotReadItself() throws {
            try peerRig(
                secret: "SECRET-BYTES\n",
                { dir, secret in
                    for album in ["linked", "open"] {
                        try FileManager.default.createDirectory(atPath: dir.path(album), withIntermediateDirectories: true)
                        #expect(chmod(dir.path(album), 0o755) == 0)
                        try FileManager.default.copyItem(atPath: Fixtures.path("tone.flac"), toPath: dir.path("\(album)/a.flac"))
                        #expect(chmod(dir.path("\(album)/a.flac"), 0o644) == 0)
                    }
                    #expect(symlink(secret, dir.path("linked/cover.jpg")) == 0)
                    try "OPEN-COVER\n".write(toFile: dir.path("open/cover.jpg"), atomically: false, encoding: .utf8)
                    #expect(chmod(dir.path("open/cover.jpg"), 0o644) == 0)
                }
            ) { dir, daemon in
                let refused = try mpd(as: 65534, daemon.mpdSocketPath, ["albumart \"\(dir.path("linked/a.flac"))\" 0"])
                #expect(refused.contains("ACK [4@0]"), "\(refused)")
                #expect(!refused.contains("SECRET"), "the secret never comes back: \(refused)")
                let sent = try mpd(as: 65534, daemon.mpdSocketPath, ["albumart \"\(dir.path("open/a.flac"))\" 0"])
                #expect(sent.contains("size: 11") && sent.contains("OPEN-COVER"), "\(sent)")
            }
        }

        /// §6: `input.roots` is checked on the file opened when the item plays, not only when it
        /// was added: a file inside a root, swapped for a link to one outside after it was
        /// queued, is refused, and nothing of the outside file is heard.
        @Test func aFileSwappedForALinkAfterItWasQueuedIsRefused() throws {
            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            let music = dir.path("music")
            let outside = dir.path("outside")
            try FileManager.default.createDirectory(atPath: music, withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: true)
            let song = music + "/song.wav"
            try FileManager.default.copyItem(atPath: Fixtures.path("tone.wav"), toPath: song)
            try FileManager.default.copyItem(atPath: Fixtures.path("tone.wav"), toPath: outside + "/secret.wav")
            let config = dir.path("tonearmd.toml")
            try "[input]\nroots = [\"\(music)\"]\n".write(toFile: config, atomically: true, encoding: .utf8)
            let daemon = try DaemonProcess(arguments: ["--device", dir.fileDevice("out.raw"), "--config", config])
            defer { withExtendedLifetime(daemon) {} }
            let client = try daemon.connect()
            #expect(try client.call("add", ["urls": [song]]).result != nil)
            try FileManager.default.removeItem(atPath: song)
            #expect(symlink(outside + "/secret.wav", song) == 0)
            let play = try client.call("play", ["id": 0])
            #expect(play.errorData?["kind"] as? String == "permission_denied" || play.stateName != "playing", "\(play)")
            usleep(300_000)
            #expect(readWholeFile(dir.path("out.raw")).isEmpty, "nothing of the outside file was heard")
            #expect(daemon.log.contains("outside input.roots"), "\(daemon.log)")
        }

        /// §7: with `input.roots`, a playlist link that flips between a playlist inside the roots
        /// and one outside never yields the outside one's entries: the roots are checked on the
        /// file opened, and the entries read from it.
        @Test func aFlippingLinkNeverReadsOutsideTheRoots() throws {
            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            let music = dir.path("music")
            let outside = dir.path("outside")
            try FileManager.default.createDirectory(atPath: music, withIntermediateDirectories: true)
            try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: true)
            try "inside.flac\n".write(toFile: music + "/inside.m3u", atomically: false, encoding: .utf8)
            try "/SECRET-OUTSIDE.flac\n".write(toFile: outside + "/secret.m3u", atomically: false, encoding: .utf8)
            let config = dir.path("tonearmd.toml")
            try "[input]\nroots = [\"\(music)\"]\n[mpd]\nmusic_directory = \"\(music)\"\n"
                .write(toFile: config, atomically: true, encoding: .utf8)
            let daemon = try DaemonProcess(arguments: ["--device", "null", "--config", config])
            defer { withExtendedLifetime(daemon) {} }
            _ = try daemon.connect()
            let link = music + "/link.m3u"
            #expect(symlink(music + "/inside.m3u", link) == 0)
            let stop = Guarded(false)
            let flipper = Thread {
                var inside = false
                while !stop.value {
                    let staging = link + ".new"
                    unlink(staging)
                    _ = symlink(inside ? music + "/inside.m3u" : outside + "/secret.m3u", staging)
                    _ = rename(staging, link)
                    inside.toggle()
                }
            }
            flipper.start()
            defer { stop.value = true }
            let mpd = try daemon.connectMPD()
            var leaked = 0
            var listed = 0
            let deadline = Date().addingTimeInterval(20)
            for _ in 0..<(Sanitizer.active == nil ? 1_000 : 200) where Date() < deadline {
                let reply = try mpd.command("listplaylist link")
                if reply.description.contains("SECRET") { leaked += 1 }
                if reply.ok { listed += 1 }
            }
            stop.value = true
            #expect(leaked == 0, "entries from outside the roots came back \(leaked) times")
            #expect(listed > 0, "the inside playlist was listed too")
        }
    }
}
