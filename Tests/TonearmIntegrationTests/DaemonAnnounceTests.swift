import Foundation
import Testing
import TonearmTestSupport

extension DaemonTests {
    /// Announcements on the real daemon, heard through the `file:` capture: the music (white
    /// noise, so any run of samples says where in the file it is), a clip at another rate, and
    /// the music again from where it was.
    @Suite("Daemon announcements", .serialized, .realDaemon(minutes: 3))
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
            -> (String, [Int16])
        {
            let path = dir.path(name)
            let codec = name.hasSuffix(".wav") ? ["-c:a", "pcm_s16le"] : []
            let made = try runTool(
                "/usr/bin/ffmpeg",
                [
                    "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", source, "-t", "\(seconds)",
                    "-ar", "\(rate)", "-ac", "2",
                ] + codec + [path], timeout: 60)
            try #require(made.status == 0, "\(made.output)")
            let raw = try runTool(
                "/usr/bin/ffmpeg", ["-nostdin", "-v", "error", "-y", "-i", path, "-f", "s16le", path + ".raw"], timeout: 60)
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
            -> (DaemonProcess, LineClient)
        {
            let daemon = try DaemonProcess(
                arguments: ["--device", capture.device, "--pace", "--speed", "\(speed)"], environment: environment)
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
            let resumed = try #require(
                Self.find(back[...], in: media.musicPCM, from: lower), "the music came back from a point of the file")
            let difference = abs(Double(resumed / 2) / Double(Self.rate) - position)
            #expect(difference <= 0.05, "came back at \(Double(resumed / 2) / Double(Self.rate)) s, it stood at \(position) s")
            // The test pauses before it reads the capture: its last 5 ms may be the pause's fade
            // out (whether they reached the file by then is a matter of timing), so they are left out.
            let pauseFade = 2 * (Self.rate / 200)
            let rest = min(pcm.count - at - pauseFade, media.musicPCM.count - resumed)
            try #require(rest > 0, "music after the clips")
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
            let position = try #require(waitForHeldPosition(client)["position"] as? Double)
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
            let back = try waitForStatus(client, timeout: 10 * Sanitizer.timeScale) {
                // The stream's media is known once its first frames are decoded, which on a busy
                // machine can come after the buffer starts filling.
                $0.name == "playing" && ($0["buffer"] as? Double ?? 0) > 0 && $0["media"] is [String: Any]
            }
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
            let whole =
                chimeAt + media.chimePCM.count + tone.count <= pcm.count
                && pcm[(chimeAt + media.chimePCM.count)...].prefix(tone.count).elementsEqual(tone)
            #expect(whole, "after the chime, the queue from its start")
        }

        /// `duck`: the music plays on under the clip, lowered to `announce.duck_level` (50: what
        /// volume 50 is, × 0.125) over 0.3 s, the clip mixed over it at its own volume, then the
        /// music comes back up; nothing stops, the position runs on. The clip is a constant level,
        /// so what is mixed in is that level wherever it starts: the capture is checked against
        /// the music × the documented ramp, plus the clip over a run of exactly its length.
        @Test func aDuckedClipPlaysOverTheMusicLowered() throws {
            let capture = try Capture()
            defer { capture.dir.remove() }
            let media = try Self.media(capture.dir)
            let clip = try Self.make(capture.dir, "level.wav", "aevalsrc=0.1", rate: Self.rate, seconds: 1)
            let level = try #require(clip.1.first)
            try #require(clip.1.allSatisfy { $0 == level } && clip.1.count == Self.rate * 2)
            let speed = 2.0
            let (daemon, client) = try start(capture, speed: speed)
            defer { withExtendedLifetime(daemon) {} }
            #expect(try client.call("add", ["urls": [media.music], "play": true]).stateName == "playing")
            let before = try waitForStatus(client) { ($0["position"] as? Double ?? 0) >= 1 }
            let announced = try client.call("announce", ["url": clip.0, "duck": true, "volume": 100])
            #expect(announced.result?["place"] as? Int == 0, "\(announced)")
            let during = try #require(client.call("status").result)
            #expect(during.name == "playing" && (during["announcing"] as? [String: Any])?["ducking"] as? Bool == true, "\(during)")
            let after = try waitUntilDone(client)
            let went = (after["position"] as? Double ?? 0) - (before["position"] as? Double ?? 0)
            #expect(after.name == "playing" && went > 1, "the music went on meanwhile: \(after)")
            usleep(600_000)
            #expect(try client.call("pause").stateName == "paused")
            let pcm = DaemonSleepTests.samples(capture.settled())
            let music = media.musicPCM
            try #require(pcm.count < music.count, "the music did not end")

            // The duck's ramp and the clip start about together (the fade at the next write, the
            // clip once the decoder opened it), a few frames apart either way: the ramp's start is
            // the one that leaves a constant over a window where both are under way (the clip's
            // level), found coarse then fine.
            let duck = 0.125
            let rampFrames = Int((0.3 * Double(Self.rate) * speed).rounded())
            let firstDiffering = try #require((0..<pcm.count).first { pcm[$0] != music[$0] }) / 2
            func musicLevel(_ frame: Int, rampStart: Int) -> Double {
                frame < rampStart ? 1 : 1 + (duck - 1) * Double(min(frame - rampStart + 1, rampFrames)) / Double(rampFrames)
            }
            func rest(_ frame: Int, _ channel: Int, rampStart: Int) -> Double {
                Double(pcm[frame * 2 + channel]) - (Double(music[frame * 2 + channel]) * musicLevel(frame, rampStart: rampStart)).rounded()
            }
            let window = (firstDiffering + 4000)..<(firstDiffering + 6000)
            func spread(_ start: Int) -> Double { window.reduce(0) { $0 + abs(rest($1, 0, rampStart: start) - Double(level)) } }
            let coarse = try #require(
                stride(from: firstDiffering - 3000, through: firstDiffering + 3000, by: 50).min { spread($0) < spread($1) })
            let rampStart = try #require((coarse - 50...coarse + 50).min { spread($0) < spread($1) })
            // Then: only the music (rest 0) until the clip, the clip's level over exactly its
            // length, and only the lowered music again until it comes back up.
            let clipStart = try #require(
                (min(rampStart, firstDiffering)..<pcm.count / 2).first {
                    abs(rest($0, 0, rampStart: rampStart) - Double(level)) <= 2
                })
            let clipFrames = clip.1.count / 2
            var offBefore = 0
            var offInClip = 0
            for frame in min(rampStart, clipStart)..<clipStart {
                for channel in 0..<2 where abs(rest(frame, channel, rampStart: rampStart)) > 1 { offBefore += 1 }
            }
            for frame in clipStart..<clipStart + clipFrames {
                for channel in 0..<2 where abs(rest(frame, channel, rampStart: rampStart) - Double(level)) > 2 { offInClip += 1 }
            }
            #expect(offBefore == 0, "the music alone, along the ramp, before the clip: \(offBefore) samples off")
            #expect(offInClip == 0, "the clip over the lowered music, \(clipFrames) frames from \(clipStart): \(offInClip) samples off")
            #expect(
                abs(rest(clipStart + clipFrames, 0, rampStart: rampStart)) <= 1
                    && abs(rest(clipStart + clipFrames, 1, rampStart: rampStart)) <= 1, "and nothing more of it")
            // Back up at full level: the music as it is, up to the pause's own fade.
            let tail = (pcm.count / 2 - 220 - 4000)..<(pcm.count / 2 - 220)
            #expect(tail.allSatisfy { pcm[$0 * 2] == music[$0 * 2] && pcm[$0 * 2 + 1] == music[$0 * 2 + 1] }, "at full level again")
        }

        /// A command during a ducked clip ends it: the clip stops, the music's level comes back,
        /// and the command acts on the music as it is (a pause stays where it was heard).
        @Test func aPauseDuringADuckedClipEndsItAndTheMusicComesBackUp() throws {
            let capture = try Capture()
            defer { capture.dir.remove() }
            let media = try Self.media(capture.dir)
            let clip = try Self.make(capture.dir, "long.wav", "sine=f=660", rate: 22050, seconds: 5)
            let (daemon, client) = try start(capture)
            defer { withExtendedLifetime(daemon) {} }
            #expect(try client.call("add", ["urls": [media.music], "play": true]).stateName == "playing")
            _ = try waitForStatus(client) { ($0["position"] as? Double ?? 0) >= 1 }
            #expect(try client.call("announce", ["url": clip.0, "duck": true]).result?["place"] as? Int == 0)
            usleep(400_000)
            #expect(try client.call("pause").stateName == "paused")
            let paused = try #require(client.call("status").result)
            #expect(paused["announcing"] == nil, "\(paused)")
            let position = try #require(paused["position"] as? Double)
            #expect(try client.call("play").stateName == "playing")
            usleep(500_000)
            _ = try client.call("pause")
            let pcm = DaemonSleepTests.samples(capture.settled())
            // After the play: the music (never interrupted, so at its own frames in the capture)
            // from where it paused, after its 5 ms fade-in, at full level, and no clip.
            let from = Int((position * Double(Self.rate)).rounded())
            try #require(pcm.count >= (from + 4220) * 2)
            let resumed = pcm[(from + 220) * 2..<(from + 4220) * 2]
            #expect(resumed.elementsEqual(media.musicPCM[(from + 220) * 2..<(from + 4220) * 2]), "the music, whole again, from \(from)")
        }

        /// The sleep timer's fade and a duck are levels of their own: a ducked clip that ends
        /// while the sleep timer fades the music out brings it back up only to where that fade
        /// stands, and the fade goes on to silence; the next play is at full level.
        @Test func aDuckedClipsEndLeavesTheSleepTimersFadeGoingOn() throws {
            let capture = try Capture()
            defer { capture.dir.remove() }
            let media = try Self.media(capture.dir)
            let clip = try Self.make(capture.dir, "chime.wav", "sine=f=880", rate: Self.rate, seconds: 0.4)
            let (daemon, client) = try start(capture, speed: 1)
            defer { withExtendedLifetime(daemon) {} }
            #expect(try client.call("add", ["urls": [media.music], "play": true]).stateName == "playing")
            _ = try waitForStatus(client) { ($0["position"] as? Double ?? 0) >= 1 }
            #expect(try client.call("announce", ["url": clip.0, "duck": true, "volume": 100]).result?["place"] as? Int == 0)
            // The fade runs from 0.3 s to 2.3 s from now; the clip and the duck's way back up are
            // over by about 1 s.
            #expect(try client.call("sleep", ["after_s": 2.3, "fade_s": 2.0]).result?["sleep"] != nil)
            _ = try waitUntilDone(client)
            _ = try waitForStatus(client, timeout: 10 * Sanitizer.timeScale) { $0.name == "paused" }
            // Paused once the silence is heard: what the output wrote ahead is all written by then.
            let paused = try waitForHeldPosition(client)
            #expect(paused["sleep"] is NSNull, "\(paused)")
            let pcm = DaemonSleepTests.samples(capture.settled())
            let last = try #require(pcm.lastIndex { $0 != 0 }) / 2
            // The music is white noise at 0.3 of full scale: a level of 1 would show samples up
            // to ~9800 here; the fade's last 150 ms are at most 7.5 % of it.
            let window: Int = Self.rate * 3 / 20
            let endStart: Int = max(0, last - window) * 2
            let loudest: Int = pcm[endStart...].map { abs(Int($0)) }.max() ?? 0
            #expect(loudest < 800, "the music faded out to the pause: \(loudest) in its last 150 ms")

            #expect(try client.call("play").stateName == "playing")
            usleep(600_000)
            _ = try client.call("pause")
            let resumed = Array(DaemonSleepTests.samples(capture.settled())[pcm.count...])
            try #require(resumed.count > 12_000, "\(resumed.count) samples after the play")
            let back = resumed[4000..<12_000]
            #expect(Self.find(back, in: media.musicPCM) != nil, "full level again after the play")
        }

        @Test func badAnnouncementsGetAClearError() throws {
            let daemon = try DaemonProcess(arguments: ["--device", "null"])
            let client = try daemon.connect()
            for params: [String: Any] in [
                [:], ["url": Fixtures.path("tone.wav"), "volume": 101],
                ["url": Fixtures.path("tone.wav"), "duck": "yes"], ["url": 3],
            ] {
                let answer = try client.call("announce", params)
                #expect(answer.errorCode == -32602 && answer.errorMessage?.isEmpty == false, "\(params): \(answer)")
            }
            #expect(try client.call("announce", ["url": "ftp://x/y.mp3"]).errorData?["kind"] as? String == "permission_denied")
            #expect(try client.call("status").result?["announcing"] == nil)
        }
    }
}
