import Foundation
import Testing
import TonearmTestSupport

extension DaemonTests {
    /// Announcements on the real daemon, heard through the `file:` capture: the music (white
    /// noise, so any run of samples says where in the file it is), a clip at another rate, and
    /// the music again from where it was.
    @Suite("Daemon announcements", .serialized, .timeLimit(.minutes(3)))
    struct DaemonAnnounceTests {
        typealias Capture = DaemonGaplessTests.Capture
        static let rate = 44100

        struct Media {
            let music: String
            let musicPCM: [Int16]
            let chime: String
            let chimePCM: [Int16]
            let speech: String
            let speechPCM: [Int16]
        }

        /// 16-bit stereo WAVs made by FFmpeg, and their PCM as FFmpeg decodes them.
        /// A stereo file made by FFmpeg from a lavfi source (16-bit PCM unless the name says
        /// otherwise), and its PCM as FFmpeg decodes it.
        static func make(_ dir: TemporaryDirectory, _ name: String, _ source: String, rate: Int, seconds: Double) throws
            -> (String, [Int16]) {
            let path = dir.path(name)
            let codec = name.hasSuffix(".wav") ? ["-c:a", "pcm_s16le"] : []
            let made = try runTool("/usr/bin/ffmpeg", ["-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", source, "-t", "\(seconds)",
                                                       "-ar", "\(rate)", "-ac", "2"] + codec + [path], timeout: 60)
            try #require(made.status == 0, "\(made.output)")
            let raw = try runTool("/usr/bin/ffmpeg", ["-nostdin", "-v", "error", "-y", "-i", path, "-f", "s16le", path + ".raw"], timeout: 60)
            try #require(raw.status == 0, "\(raw.output)")
            return (path, DaemonSleepTests.samples(try Data(contentsOf: URL(fileURLWithPath: path + ".raw"))))
        }

        static func media(_ dir: TemporaryDirectory) throws -> Media {
            let music = try make(dir, "music.wav", "anoisesrc=color=white:amplitude=0.3:seed=11", rate: rate, seconds: 8)
            let chime = try make(dir, "chime.wav", "sine=f=880", rate: 48000, seconds: 0.5)
            let speech = try make(dir, "speech.wav", "anoisesrc=color=pink:amplitude=0.2:seed=5", rate: 48000, seconds: 0.4)
            return Media(music: music.0, musicPCM: music.1, chime: chime.0, chimePCM: chime.1, speech: speech.0, speechPCM: speech.1)
        }

        /// Where `part` starts in `whole` (sample index), searching from `from`.
        static func find(_ part: ArraySlice<Int16>, in whole: [Int16], from: Int = 0) -> Int? {
            guard !part.isEmpty, whole.count >= part.count else { return nil }
            var index = from
            while index + part.count <= whole.count {
                if whole[index] == part.first!, whole[index..<index + part.count] == part { return index }
                index += 1
            }
            return nil
        }

        private func start(_ capture: Capture, speed: Double = 2, environment: [String: String] = [:]) throws
            -> (DaemonProcess, LineClient) {
            let daemon = try DaemonProcess(arguments: ["--device", capture.device, "--pace", "--speed", "\(speed)"], environment: environment)
            return (daemon, try daemon.connect())
        }

        /// Waits until no announcement plays.
        private func waitUntilDone(_ client: LineClient) throws -> [String: Any] {
            try waitForStatus(client, timeout: 15 * Sanitizer.timeScale) { $0["announcing"] == nil }
        }

        /// Checks the capture from `clipAt`: `clips` in turn, whole and bit-exact, then the music
        /// from within 50 ms of `position`, bit-exact. Returns where the music came back.
        private func expectClipsThenMusic(_ pcm: [Int16], _ media: Media, clips: [[Int16]], position: Double) throws -> Int {
            var at = try #require(Self.find(clips[0].prefix(400), in: pcm), "the first clip is in the capture")
            for (n, clip) in clips.enumerated() {
                try #require(pcm.count >= at + clip.count, "clip \(n) whole")
                let whole = pcm[at..<at + clip.count] == clip[...]
                #expect(whole, "clip \(n) bit-exact, at its own rate")
                at += clip.count
            }
            let back = Array(pcm[at..<min(pcm.count, at + 2000)])
            try #require(back.count == 2000, "music after the clips")
            let lower = max(0, (Int(position * Double(Self.rate)) - Self.rate) * 2)
            let resumed = try #require(Self.find(back[...], in: media.musicPCM, from: lower), "the music came back from a point of the file")
            let difference = abs(Double(resumed / 2) / Double(Self.rate) - position)
            #expect(difference <= 0.05, "came back at \(Double(resumed / 2) / Double(Self.rate)) s, it stood at \(position) s")
            let rest = min(pcm.count - at, media.musicPCM.count - resumed)
            let exact = pcm[at..<at + rest] == media.musicPCM[resumed..<resumed + rest]
            #expect(exact, "and plays on bit-exact")
            return resumed
        }

        @Test func playingMusicFadesOutForTheClipAndComesBackWhereItWas() throws {
            let capture = try Capture()
            defer { capture.dir.remove() }
            let media = try Self.media(capture.dir)
            let (daemon, client) = try start(capture)
            defer { withExtendedLifetime(daemon) {} }
            let added = try client.call("add", ["urls": [media.music], "play": true])
            #expect(added.stateName == "playing")
            let before = try waitForStatus(client) { ($0["position"] as? Double ?? 0) >= 1 }
            let version = try #require(before["queue_version"] as? Int)
            let announced = try client.call("announce", ["url": media.chime])
            #expect(announced.result?["place"] as? Int == 0, "\(announced)")
            let position = try #require(client.call("status").result?["position"] as? Double)
            let during = try #require(client.call("status").result)
            #expect(during.name == "playing" && (during["announcing"] as? [String: Any])?["waiting"] as? Int == 0, "\(during)")
            let after = try waitUntilDone(client)
            #expect(after.name == "playing" && after["queue_version"] as? Int == version, "\(after)")
            usleep(800_000)
            _ = try client.call("pause")
            let pcm = DaemonSleepTests.samples(capture.settled())
            // Before the clip: the music as it is, up to the fade.
            let differs = try #require((0..<pcm.count).first { pcm[$0] != media.musicPCM[$0] })
            #expect(Double(differs / 2) / Double(Self.rate) >= position - 0.05, "the music untouched until the announcement")
            _ = try expectClipsThenMusic(pcm, media, clips: [media.chimePCM], position: position)
        }

        /// Paused, it stays paused; two announcements play in turn; play then goes on from the
        /// paused sample.
        @Test func pausedStaysPausedAndTwoAnnouncementsPlayInTurn() throws {
            let capture = try Capture()
            defer { capture.dir.remove() }
            let media = try Self.media(capture.dir)
            let (daemon, client) = try start(capture)
            defer { withExtendedLifetime(daemon) {} }
            #expect(try client.call("add", ["urls": [media.music], "play": true]).stateName == "playing")
            _ = try waitForStatus(client) { ($0["position"] as? Double ?? 0) >= 1 }
            #expect(try client.call("pause").stateName == "paused")
            let position = try #require(client.call("status").result?["position"] as? Double)
            #expect(try client.call("announce", ["url": media.chime]).result?["place"] as? Int == 0)
            #expect(try client.call("announce", ["url": media.speech, "volume": 100]).result?["place"] as? Int == 1)
            let after = try waitUntilDone(client)
            #expect(after.name == "paused" && after["position"] as? Double == position, "\(after)")
            #expect(try client.call("play").stateName == "playing")
            usleep(800_000)
            _ = try client.call("pause")
            let pcm = DaemonSleepTests.samples(capture.settled())
            let resumed = try expectClipsThenMusic(pcm, media, clips: [media.chimePCM, media.speechPCM], position: position)
            #expect(abs(Double(resumed / 2) / Double(Self.rate) - position) < 0.001, "paused, it comes back to the sample")
        }

        /// A live stream rejoins live: the same queue item, playing, reading the stream anew.
        @Test func aLiveStreamRejoinsLive() throws {
            let capture = try Capture()
            defer { capture.dir.remove() }
            let media = try Self.media(capture.dir)
            let (stream, _) = try Self.make(capture.dir, "radio.mp3", "sine=f=300", rate: Self.rate, seconds: 60)
            let server = try TestHTTPServer()
            defer { server.stop() }
            server.route("/radio", .live(path: stream, contentType: "audio/mpeg", bytesPerSecond: 32_000))
            let (daemon, client) = try start(capture, speed: 1)
            defer { withExtendedLifetime(daemon) {} }
            let added = try client.call("add", ["urls": [server.url("/radio")], "play": true])
            #expect(added.stateName == "playing", "\(added)")
            let id = try #require((added.result?["items"] as? [[String: Any]])?.first?["id"] as? Int)
            _ = try waitForStatus(client, timeout: 10 * Sanitizer.timeScale) { ($0["position"] as? Double ?? 0) >= 1 }
            #expect(try client.call("announce", ["url": media.chime]).result?["place"] as? Int == 0)
            let after = try waitUntilDone(client)
            #expect(after.name == "playing" && after["current"] as? Int == id, "\(after)")
            let back = try waitForStatus(client, timeout: 10 * Sanitizer.timeScale) { $0.name == "playing" && ($0["buffer"] as? Double ?? 0) > 0 }
            #expect(((back["media"] as? [String: Any])?["live"] as? Bool) == true, "\(back)")
            #expect(server.requests.filter { $0.path == "/radio" }.count >= 2, "the stream was read anew")
            let pcm = DaemonSleepTests.samples(capture.settled())
            #expect(Self.find(media.chimePCM.prefix(400), in: pcm) != nil, "the clip was heard")
        }

        /// Killed during an announcement, the daemon comes back to the item at the point the
        /// announcement would have returned to.
        @Test func aKillNineDuringAnAnnouncementResumesWhereItWouldHaveComeBack() throws {
            let capture = try Capture()
            defer { capture.dir.remove() }
            let media = try Self.media(capture.dir)
            let (long, _) = try Self.make(capture.dir, "long.wav", "sine=f=600", rate: Self.rate, seconds: 20)
            let environment = ["STATE_DIRECTORY": capture.dir.path("state")]
            let (first, client) = try start(capture, speed: 1, environment: environment)
            let added = try client.call("add", ["urls": [media.music], "play": true])
            let id = try #require((added.result?["items"] as? [[String: Any]])?.first?["id"] as? Int)
            _ = try waitForStatus(client) { ($0["position"] as? Double ?? 0) >= 1 }
            #expect(try client.call("announce", ["url": long]).result?["place"] as? Int == 0)
            let position = try #require(client.call("status").result?["position"] as? Double)
            usleep(700_000)
            kill(first.process.processIdentifier, SIGKILL)
            first.process.waitUntilExit()
            let second = try DaemonProcess(arguments: ["--device", "null"], environment: environment)
            let again = try second.connect()
            let status = try waitForStatus(again, timeout: 10 * Sanitizer.timeScale) { $0.name == "paused" }
            #expect(status["current"] as? Int == id && abs((status["position"] as? Double ?? -1) - position) < 0.05, "\(status)")
            #expect(status["announcing"] == nil)
        }

        /// A seek during an announcement ends it: the item comes back at the seek's target.
        @Test func aSeekDuringAnAnnouncementBringsTheItemBackThere() throws {
            let capture = try Capture()
            defer { capture.dir.remove() }
            let media = try Self.media(capture.dir)
            let (long, _) = try Self.make(capture.dir, "long.wav", "sine=f=600", rate: 48000, seconds: 20)
            let (daemon, client) = try start(capture)
            defer { withExtendedLifetime(daemon) {} }
            #expect(try client.call("add", ["urls": [media.music], "play": true]).stateName == "playing")
            _ = try waitForStatus(client) { ($0["position"] as? Double ?? 0) >= 1 }
            #expect(try client.call("announce", ["url": long]).result?["place"] as? Int == 0)
            usleep(600_000)
            let sought = try client.call("seek", ["position": 5.0])
            #expect(sought.result?["position"] as? Double == 5 && sought.stateName == "playing", "\(sought)")
            let status = try #require(client.call("status").result)
            #expect(status["announcing"] == nil && status.name == "playing", "\(status)")
            usleep(600_000)
            _ = try client.call("pause")
            let pcm = DaemonSleepTests.samples(capture.settled())
            let from5 = media.musicPCM[5 * Self.rate * 2..<(5 * Self.rate + 2000) * 2]
            #expect(Self.find(from5, in: pcm) != nil, "the music came back at 5 s")
        }

        /// `stop` and `clear` end announcements, even with nothing loaded; after the queue ended,
        /// an announcement leaves playback stopped, and `play` starts the queue, not the clip.
        @Test func stopClearAndAnEndedQueueEndAnnouncementsCleanly() throws {
            let capture = try Capture()
            defer { capture.dir.remove() }
            let media = try Self.media(capture.dir)
            let (long, _) = try Self.make(capture.dir, "long.wav", "sine=f=600", rate: 48000, seconds: 20)
            let (daemon, client) = try start(capture, speed: 8)
            defer { withExtendedLifetime(daemon) {} }
            // Nothing loaded: stop ends it.
            #expect(try client.call("announce", ["url": long]).result?["place"] as? Int == 0)
            _ = try waitForStatus(client) { $0["announcing"] != nil }
            _ = try client.call("stop")
            #expect(try client.call("status").result?["announcing"] == nil)
            let afterStop = capture.settled().count
            usleep(300_000)
            #expect(capture.settled().count == afterStop, "the clip stopped")
            // Playing: clear ends it.
            #expect(try client.call("add", ["urls": [media.music], "play": true]).stateName == "playing")
            #expect(try client.call("announce", ["url": long]).result?["place"] as? Int == 0)
            _ = try client.call("clear")
            let cleared = try #require(client.call("status").result)
            #expect(cleared["announcing"] == nil && cleared.name == "idle", "\(cleared)")
            // The queue played to its end: stopped afterwards, and play starts the queue.
            let added = try client.call("add", ["urls": [Fixtures.path("tone.wav")], "play": true])
            #expect(added.stateName == "playing")
            _ = try waitForStatus(client, timeout: 10 * Sanitizer.timeScale) { $0.name == "ended" }
            #expect(try client.call("announce", ["url": media.chime]).result?["place"] as? Int == 0)
            let done = try waitUntilDone(client)
            #expect(done.name == "idle", "\(done)")
            #expect(try client.call("play").stateName == "playing")
            _ = try waitForStatus(client, timeout: 10 * Sanitizer.timeScale) { $0.name == "ended" }
            let pcm = DaemonSleepTests.samples(capture.settled())
            let tone = DaemonSleepTests.samples(try Fixtures.wavPCM("tone.wav"))
            let chimeAt = try #require(Self.find(media.chimePCM.prefix(400), in: pcm), "the chime was heard")
            let whole = chimeAt + media.chimePCM.count + tone.count <= pcm.count
                && pcm[(chimeAt + media.chimePCM.count)...].prefix(tone.count).elementsEqual(tone)
            #expect(whole, "after the chime, the queue from its start")
        }

        @Test func badAnnouncementsGetAClearError() throws {
            let daemon = try DaemonProcess(arguments: ["--device", "null"])
            let client = try daemon.connect()
            for params: [String: Any] in [[:], ["url": Fixtures.path("tone.wav"), "volume": 101],
                                          ["url": Fixtures.path("tone.wav"), "duck": true], ["url": 3]] {
                let answer = try client.call("announce", params)
                #expect(answer.errorCode == -32602 && answer.errorMessage?.isEmpty == false, "\(params): \(answer)")
            }
            #expect(try client.call("announce", ["url": "ftp://x/y.mp3"]).errorData?["kind"] as? String == "permission_denied")
            #expect(try client.call("status").result?["announcing"] == nil)
        }
    }
}
