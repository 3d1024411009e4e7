import Foundation
import Testing
import TonearmTestSupport

extension DaemonTests {
    /// Crossfades on the real daemon, heard through the `file:` capture: outside the overlap the
    /// PCM is each item's own decode; inside it, the documented equal-power mix of the two.
    @Suite("Daemon crossfade", .serialized, .realDaemon(minutes: 3))
    struct DaemonCrossfadeTests {
        typealias Capture = DaemonGaplessTests.Capture

        /// A file made by FFmpeg from a lavfi source: `codec` and `extra` arguments as given.
        static func make(
            _ dir: TemporaryDirectory, _ name: String, _ source: String, rate: Int, channels: Int,
            seconds: Double, extra: [String] = []
        ) throws -> String {
            let path = dir.path(name)
            let made = try runTool(
                "/usr/bin/ffmpeg",
                [
                    "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", source,
                    "-t", "\(seconds)", "-ar", "\(rate)", "-ac", "\(channels)",
                ] + extra + [path],
                timeout: 60)
            try #require(made.status == 0, "\(made.output)")
            return path
        }

        /// A 16-bit stereo file's PCM as FFmpeg decodes it (the device's format when it is played first).
        static func decoded(_ path: String) throws -> [Int16] {
            let raw = try runTool(
                "/usr/bin/ffmpeg", ["-nostdin", "-v", "error", "-y", "-i", path, "-f", "s16le", path + ".raw"], timeout: 60)
            try #require(raw.status == 0, "\(raw.output)")
            return DaemonSleepTests.samples(try Data(contentsOf: URL(fileURLWithPath: path + ".raw")))
        }

        /// Plays `files` as a queue to its end with `crossfade` seconds; returns the capture.
        /// `before`: files queued ahead of them and not played (their tags are read first).
        static func play(
            _ files: [String], crossfade: Double, capture: Capture, config: String = "",
            before: [String] = []
        ) throws -> [Int16] {
            // No config file when there is nothing to set (Foundation leaks the buffer of an empty
            // file read, which LeakSanitizer reports).
            let configArguments = config.isEmpty ? [] : ["--config", try Self.config(capture, config)]
            let daemon = try DaemonProcess(arguments: ["--device", capture.device, "--pace", "--speed", "8"] + configArguments)
            defer { withExtendedLifetime(daemon) {} }
            let client = try daemon.connect()
            let watcher = try daemon.connect()
            #expect(try watcher.call("subscribe", ["events": ["transition"]]).result != nil)
            let options = try client.call("options", ["crossfade": crossfade]).result
            #expect(options?["crossfade"] as? Double == crossfade, "\(String(describing: options))")
            if !before.isEmpty { #expect(try client.call("add", ["urls": before]).result != nil) }
            // Played at once: which items share an album is judged from tags read meanwhile.
            #expect(try client.call("add", ["urls": files, "position": before.count, "play": true]).stateName == "playing")
            _ = try readEvents(watcher, timeout: 30 * Sanitizer.timeScale) { $0.transitionTo == "ended" }
            return DaemonSleepTests.samples(capture.settled())
        }

        /// Checks `pcm` (16-bit stereo) is `outgoing` with its last `overlap` frames mixed into the
        /// first of `incoming` along the curve (within 1 LSB), then the rest of `incoming`, exactly.
        static func expectCrossfade(_ pcm: ArraySlice<Int16>, outgoing: ArraySlice<Int16>, incoming: [Int16], overlap: Int) {
            let outFrames = outgoing.count / 2
            #expect(
                pcm.count == outgoing.count + incoming.count - overlap * 2,
                "\(pcm.count / 2) frames: the two items overlap by \(overlap) frames")
            guard pcm.count == outgoing.count + incoming.count - overlap * 2 else { return }
            let pcm = Array(pcm)
            let outgoing = Array(outgoing)
            let kept = (outFrames - overlap) * 2
            #expect(pcm[0..<kept] == outgoing[0..<kept], "before the overlap: the outgoing item as it is")
            var worst = 0
            var changed = 0
            for frame in 0..<overlap {
                let angle = Double.pi / 2 * Double(frame) / Double(overlap)
                for channel in 0..<2 {
                    let out = Double(outgoing[kept + frame * 2 + channel])
                    let into = Double(incoming[frame * 2 + channel])
                    let mixed = min(max((into * sin(angle) + out * cos(angle)).rounded(), -32768), 32767)
                    let heard = Int(pcm[kept + frame * 2 + channel])
                    worst = max(worst, abs(heard - Int(mixed)))
                    if heard != Int(outgoing[kept + frame * 2 + channel]) { changed += 1 }
                }
            }
            #expect(worst <= 1, "in the overlap: the equal-power mix within 1 LSB (worst \(worst))")
            #expect(changed > overlap, "the overlap is a mix, not the outgoing item alone")
            let after = kept + overlap * 2
            #expect(pcm[after...] == incoming[(overlap * 2)...], "after the overlap: the incoming item as it is")
        }

        /// A 44.1 kHz stereo 16-bit tone, then a 48 kHz mono float tone: the device opens for the
        /// first, and the second is converted to that format for the overlap and to its end. Its
        /// own decode in that format is what a daemon with the format fixed plays of it alone.
        @Test func twoTonesOfOtherFormatsCrossfadeAlongTheCurve() throws {
            let capture = try Capture()
            let reference = try Capture()
            defer {
                capture.dir.remove()
                reference.dir.remove()
            }
            let first = try Self.make(
                capture.dir, "first.wav", "sine=f=440", rate: 44100, channels: 2, seconds: 5,
                extra: ["-c:a", "pcm_s16le"])
            let second = try Self.make(
                capture.dir, "second.wav", "sine=f=1000", rate: 48000, channels: 1, seconds: 4,
                extra: ["-c:a", "pcm_f32le"])
            let pcm = try Self.play([first, second], crossfade: 2, capture: capture)
            let alone = try Self.play(
                [second], crossfade: 2, capture: reference,
                config: "[output]\nsample_rate = 44100\nchannels = 2\nformat = \"s16\"\n")
            #expect(abs(alone.count / 2 - 4 * 44100) < 100, "the second alone, converted: \(alone.count / 2) frames")
            Self.expectCrossfade(pcm[...], outgoing: try Self.decoded(first)[...], incoming: alone, overlap: 2 * 44100)
        }

        /// Two tracks of one album join gaplessly, bit for bit; the third, of another album,
        /// crossfades into the second. With 300 files queued ahead, the album's tags are read
        /// only after its first track starts: the join waits for them, and never fades by mistake.
        @Test(arguments: [0, 300])
        func tracksOfOneAlbumStayGaplessAndOthersCrossfade(queuedAhead: Int) throws {
            let capture = try Capture()
            defer { capture.dir.remove() }
            let filler = try Self.make(capture.dir, "filler.wav", "sine=f=100", rate: 44100, channels: 2, seconds: 0.1)
            let ahead = try (0..<queuedAhead).map { index in
                let link = capture.dir.path("ahead-\(index).wav")
                try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: filler)
                return link
            }
            func track(_ name: String, _ hertz: Int, _ seconds: Double, album: String) throws -> (String, [Int16]) {
                let path = try Self.make(
                    capture.dir, name, "sine=f=\(hertz)", rate: 44100, channels: 2, seconds: seconds,
                    extra: ["-metadata", "album=\(album)"])
                return (path, try Self.decoded(path))
            }
            let one = try track("one.flac", 440, 2.5, album: "Album")
            let two = try track("two.flac", 550, 3, album: "Album")
            let three = try track("three.flac", 660, 1.5, album: "Another")
            let pcm = try Self.play([one.0, two.0, three.0], crossfade: 1, capture: capture, before: ahead)
            // 1 s asked; the third lasts 1.5 s, and an overlap is at most half of either item.
            let overlap = 33075
            let joined = one.1 + two.1.dropLast(overlap * 2)
            #expect(pcm.count > joined.count && pcm[0..<joined.count] == joined[...], "one album: gapless, bit-exact")
            // With files ahead, the third's tags may come after the second's end is decoded: that
            // join is then handed on gaplessly (whether it crossfades is not known in time).
            if queuedAhead == 0 {
                Self.expectCrossfade(pcm[one.1.count...], outgoing: two.1[...], incoming: three.1, overlap: overlap)
            }
        }

        /// The next item cannot be opened and nothing follows: the tail kept back for the
        /// crossfade is handed on as it is, and the item plays to its last sample.
        @Test func aTailWithNothingToFadeIntoPlaysToTheEnd() throws {
            let capture = try Capture()
            defer { capture.dir.remove() }
            let first = try Self.make(capture.dir, "first.flac", "sine=f=440", rate: 44100, channels: 2, seconds: 3)
            let broken = capture.dir.path("broken.flac")
            try Data("not audio at all".utf8).write(to: URL(fileURLWithPath: broken))
            let pcm = try Self.play([first, broken], crossfade: 2, capture: capture)
            let whole = try Self.decoded(first)
            #expect(pcm == whole, "\(pcm.count / 2) frames of \(whole.count / 2), bit-exact")
        }

        /// With a crossfade set, `next` while playing fades what plays out (0.3 s by default,
        /// heard before the next item), then the next item starts whole, bit-exact.
        @Test func nextWhilePlayingFadesOutFirst() throws {
            let capture = try Capture()
            defer { capture.dir.remove() }
            let noise = try Self.make(
                capture.dir, "noise.wav", "anoisesrc=color=white:amplitude=0.3:seed=3", rate: 44100,
                channels: 2, seconds: 8, extra: ["-c:a", "pcm_s16le"])
            let tone = try Self.make(
                capture.dir, "tone.wav", "sine=f=440", rate: 44100, channels: 2, seconds: 4,
                extra: ["-c:a", "pcm_s16le"])
            let noisePCM = try Self.decoded(noise)
            let tonePCM = try Self.decoded(tone)
            let daemon = try DaemonProcess(arguments: ["--device", capture.device, "--pace", "--speed", "2"])
            defer { withExtendedLifetime(daemon) {} }
            let client = try daemon.connect()
            #expect(try client.call("options", ["crossfade": 2]).result != nil)
            #expect(try client.call("add", ["urls": [noise, tone], "play": true]).stateName == "playing")
            _ = try waitForStatus(client) { ($0["position"] as? Double ?? 0) >= 1 }
            let asked = Date()
            let next = try client.call("next")
            let took = Date().timeIntervalSince(asked)
            #expect(next.stateName == "playing", "\(next)")
            #expect(took >= 0.3, "next waits for the fade: \(took) s")
            usleep(500_000)
            _ = try client.call("pause")
            let pcm = DaemonSleepTests.samples(capture.settled())
            let start = try #require(DaemonAnnounceTests.find(tonePCM.prefix(400), in: pcm), "the next item is in the capture")
            let rest = min(pcm.count - start, tonePCM.count)
            #expect(rest > 44100 && pcm[start..<start + rest] == tonePCM[0..<rest], "the next item from its start, bit-exact")
            let differs = try #require((0..<start).first { pcm[$0] != noisePCM[$0] }, "the first item is faded before it ends")
            #expect(differs >= 44100 * 2, "untouched until the fade")
            // Faded out whole before the next item (the jump waits until the output says the
            // fade's last frame is heard): its last 5 ms are at most 1.7 % of the level, then silence.
            let untouched = noisePCM[0..<differs].map { abs(Int($0)) }.max() ?? 0
            let fadeEnd = pcm[max(differs, start - 441)..<start].map { abs(Int($0)) }.max() ?? 0
            #expect(fadeEnd < untouched / 20, "faded: \(fadeEnd) at the end, \(untouched) before the fade")
        }

        /// Three `next`s during one fade skip three items: the first two are superseded, the
        /// third lands on the fourth item, after one fade.
        @Test func nextsDuringTheFadeCountOnFromEachOther() throws {
            let capture = try Capture()
            defer { capture.dir.remove() }
            let files = try (0..<4).map { index in
                try Self.make(
                    capture.dir, "t\(index).wav", "sine=f=\(300 + 100 * index)", rate: 44100, channels: 2,
                    seconds: 6, extra: ["-c:a", "pcm_s16le"])
            }
            let daemon = try DaemonProcess(arguments: [
                "--device", capture.device, "--pace", "--speed", "2", "--config",
                try Self.config(capture, "[crossfade]\nmanual_ms = 1500\n"),
            ])
            defer { withExtendedLifetime(daemon) {} }
            let client = try daemon.connect()
            #expect(try client.call("options", ["crossfade": 1]).result != nil)
            #expect(try client.call("add", ["urls": files, "play": true]).stateName == "playing")
            let ids = try #require((client.call("queue").result?["items"] as? [[String: Any]])?.compactMap { $0["id"] as? Int })
            let clients = try (0..<3).map { _ in try daemon.connect() }
            for (n, other) in clients.enumerated() {
                try other.send(line: #"{"jsonrpc":"2.0","id":\#(n + 1),"method":"next"}"#)
                usleep(100_000)
            }
            let answers = try clients.map { try $0.readJSON(timeout: 10) }
            #expect(answers[0].errorCode == -32002 && answers[1].errorCode == -32002, "\(answers)")
            #expect(answers[2].stateName == "playing", "\(answers[2])")
            #expect(try client.call("status").result?["current"] as? Int == ids[3])
        }

        static func config(_ capture: Capture, _ text: String) throws -> String {
            let path = capture.dir.path("tonearmd.toml")
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }

        /// MPD's `crossfade` sets the same option: `status` says `xfade`, and so does JSON-RPC.
        @Test func mpdCrossfadeSetsTheOptionAndBadValuesAreRefused() throws {
            let (daemon, music) = try DaemonMPDTests.daemon(music: [:])
            defer {
                withExtendedLifetime(daemon) {}
                music.remove()
            }
            let mpd = try daemon.connectMPD()
            #expect(try mpd.command("status")["xfade"] == nil, "none when off, as MPD")
            #expect(try mpd.command("crossfade 3").ok)
            #expect(try mpd.command("status")["xfade"] == "3")
            let client = try daemon.connect()
            #expect(try client.call("queue").result?["crossfade"] as? Double == 3)
            #expect(try mpd.command("crossfade 16").ack != nil, "more than 15 s")
            #expect(try mpd.command("crossfade -1").ack != nil)
            for bad: Any in [16, -1, "2", Double.nan.description] {
                let answer = try client.call("options", ["crossfade": bad])
                #expect(answer.errorCode == -32602, "\(bad): \(answer)")
            }
            #expect(try client.call("options", ["crossfade": 0]).result?["crossfade"] as? Double == 0)
            #expect(try mpd.command("status")["xfade"] == nil)
        }
    }
}
