import Foundation
import Testing
import TonearmTestSupport

#if canImport(Glibc)
    import Glibc
#endif

extension DaemonTests {
    /// Bad paths, garbage and damaged media against the real daemon: each ends in a clear answer
    /// within a time bound, and the daemon keeps serving its other clients.
    @Suite("Daemon survives bad paths and damaged media", .serialized, .realDaemon(minutes: 3))
    struct DaemonBadMediaTests {
        /// Loads `url`; returns the error kind, or nil when it loaded. Checks the answer came within `bound`.
        private func loadKind(
            _ client: LineClient, _ url: String, play: Bool = false, bound: Double = 3,
            sourceLocation: SourceLocation = #_sourceLocation
        ) throws -> (kind: String?, answer: [String: Any]) {
            let started = Date()
            let answer = try client.call("load", ["url": url, "play": play], timeout: bound + 5)
            #expect(Date().timeIntervalSince(started) < bound, "load of \(url.prefix(80)) took too long", sourceLocation: sourceLocation)
            return (answer.errorData?["kind"] as? String, answer)
        }

        @Test func badPathsGetClearErrors() throws {
            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            let daemon = try DaemonProcess(arguments: ["--device", "null"])
            let client = try daemon.connect()

            #expect(mkfifo(dir.path("pipe.mp3"), 0o644) == 0)
            try FileManager.default.createDirectory(atPath: dir.path("folder.flac"), withIntermediateDirectories: false)
            try FileManager.default.createSymbolicLink(atPath: dir.path("loop-a.wav"), withDestinationPath: dir.path("loop-b.wav"))
            try FileManager.default.createSymbolicLink(atPath: dir.path("loop-b.wav"), withDestinationPath: dir.path("loop-a.wav"))
            try FileManager.default.copyItem(atPath: Fixtures.path("tone.wav"), toPath: dir.path("locked.wav"))
            #expect(chmod(dir.path("locked.wav"), 0) == 0)
            let longPath = "/" + (0..<16).map { _ in String(repeating: "n", count: 255) }.joined(separator: "/") + "/x.wav"

            let expectations: [(String, String, String)] = [
                (dir.path("missing.wav"), "file_not_found", "no such file"),
                (dir.path("folder.flac"), "unsupported_format", "directory"),
                (dir.path("pipe.mp3"), "unsupported_format", "FIFO"),
                ("/dev/zero", "unsupported_format", "device"),
                (dir.path("loop-a.wav"), "io_error", "symbolic links"),
                (dir.path("missing.wav/child.wav"), "file_not_found", "no such file"),
            ]
            for (path, kind, words) in expectations {
                let (got, answer) = try loadKind(client, path)
                #expect(answer.errorCode == -32001 && got == kind, "\(path.prefix(60)): \(answer)")
                #expect(answer.errorMessage?.contains(words) == true, "\(answer)")
                #expect(try client.call("ping")["result"] as? String == "pong")
            }
            // Root reads anything; everyone else gets a clear refusal.
            let locked = try loadKind(client, dir.path("locked.wav"))
            #expect(locked.kind == (geteuid() == 0 ? nil : "permission_denied"), "\(locked.answer)")

            // A name that is not UTF-8 cannot travel in JSON; its percent-encoded URL is refused clearly.
            let nonUTF8 = try client.call("load", ["url": "file://" + dir.path("caf%E9.wav")])
            #expect(nonUTF8.errorCode == -32602, "\(nonUTF8)")
            for bad in ["relative/tone.wav", "", "http:///a.mp3", "file://"] {
                #expect(try client.call("load", ["url": bad]).errorCode == -32602, "\(bad)")
            }
            // A path no file system can hold is a bad request, never worth a retry.
            for tooLong in [longPath, dir.path(String(repeating: "n", count: 256) + ".wav")] {
                let answer = try client.call("load", ["url": tooLong])
                #expect(answer.errorCode == -32602 && answer.errorMessage?.contains("bytes long") == true, "\(answer)")
            }
            // URL schemes are case-insensitive.
            #expect(try client.call("load", ["url": "FILE://" + Fixtures.path("tone.wav")]).stateName == "ready")
            #expect(try client.call("load", ["url": Fixtures.path("tone.wav")]).stateName == "ready")
            #expect(daemon.process.isRunning)
        }

        /// A Matroska file whose audio starts at 30 s (a video frame at 0): duration and seek
        /// range are the audio's own 5 s, not the container's 35.
        @Test func lateAudioHasItsOwnDurationAndSeekRange() throws {
            let daemon = try DaemonProcess(arguments: ["--device", "null", "--pace", "--speed", "8"])
            let client = try daemon.connect()
            let loaded = try client.call("load", ["url": Fixtures.path("late-audio.mkv")])
            #expect(loaded.stateName == "ready", "\(loaded)")
            let duration = try #require(client.call("status").result?["duration"] as? Double)
            #expect(abs(duration - 5) < 0.05, "duration \(duration)")
            let past = try client.call("seek", ["position": 20])
            #expect((past.result?["position"] as? Double ?? 99) <= duration + 0.001, "\(past)")
            let near = try client.call("seek", ["position": 4])
            #expect(abs((near.result?["position"] as? Double ?? 0) - 4) < 0.01, "\(near)")
            #expect(try client.call("play").stateName == "playing")
            let ended = try waitForStatus(client) { $0.name == "ended" }
            #expect(abs((ended["position"] as? Double ?? 0) - duration) < 0.05, "\(ended)")
        }

        /// An AIFF whose header counts 0xFFFFFFFE frames is a file that cannot be decoded, not a
        /// missing one (FFmpeg's demuxer answers ENOENT): `unsupported_format`, not recoverable
        /// (the outside passes' issue, §14).
        @Test func aDamagedAIFFIsNotAMissingFile() throws {
            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            let aiff = try aiff(dir, frameCount: [0xFF, 0xFF, 0xFF, 0xFE])
            let daemon = try DaemonProcess(arguments: ["--device", "null"])
            defer { withExtendedLifetime(daemon) {} }
            let client = try daemon.connect()
            let load = try client.call("load", ["url": aiff])
            #expect(load.errorData?["kind"] as? String == "unsupported_format", "\(load)")
            #expect(load.errorData?["recoverable"] as? Bool == false, "\(load)")
        }

        /// tone.wav as AIFF, with the COMM chunk's frame count (big-endian) replaced.
        private func aiff(_ dir: TemporaryDirectory, frameCount: [UInt8]) throws -> String {
            let aiff = dir.path("patched.aiff")
            let converted = try runTool(
                "/usr/bin/ffmpeg", ["-v", "error", "-y", "-i", Fixtures.path("tone.wav"), "-f", "aiff", aiff],
                timeout: 30)
            #expect(converted.status == 0, "\(converted.output)")
            var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: aiff)))
            let comm = try #require((0..<(bytes.count - 4)).first { bytes[$0..<($0 + 4)].elementsEqual("COMM".utf8) })
            bytes.replaceSubrange((comm + 10)..<(comm + 14), with: frameCount)  // numSampleFrames
            try Data(bytes).write(to: URL(fileURLWithPath: aiff))
            return aiff
        }

        /// §15: an AIFF whose header says 1 frame holds two seconds, and FFmpeg plays them all:
        /// what decodes is trusted, so the duration, a seek and the end agree with what plays.
        @Test func anAIFFWhoseHeaderUndercountsHasTheLengthThatPlays() throws {
            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            let aiff = try aiff(dir, frameCount: [0, 0, 0, 1])
            let seconds = Double(try Fixtures.wavPCM("tone.wav").count / 4) / 44_100
            let daemon = try DaemonProcess(arguments: ["--device", dir.fileDevice("out.raw"), "--pace", "--speed", "4"])
            defer { withExtendedLifetime(daemon) {} }
            let client = try daemon.connect()
            let load = try client.call("load", ["url": aiff])
            let duration = try #require((load.result?["media"] as? [String: Any])?["duration"] as? Double, "\(load)")
            #expect(abs(duration - seconds) < 0.01, "duration \(duration), \(seconds) s of samples")
            let seek = try client.call("seek", ["position": 1.0])
            #expect(abs((seek.result?["position"] as? Double ?? 0) - 1.0) < 0.01, "\(seek)")
            #expect(try client.call("play").stateName == "playing")
            let ended = try waitForStatus(client, timeout: 10) { $0.name == "ended" }
            let position = ended["position"] as? Double ?? 99
            #expect(position <= duration + 0.0001 && position > duration - 0.05, "ended at \(position) of \(duration)")
        }

        @Test func garbageIsRefusedOrPlayedWithinBounds() throws {
            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            let daemon = try DaemonProcess(arguments: ["--device", "null"])
            let client = try daemon.connect()
            let bystander = try daemon.connect()
            var random = SeededRandom(seed: 4)
            // 64 MiB of noise, and a real MP3 header followed by 16 MiB of it: the decoder resyncs,
            // changes format mid-stream and skips what it cannot decode.
            let noise = Data(random.bytes(64 << 20))
            try noise.write(to: URL(fileURLWithPath: dir.path("noise.flac")))
            let header = try Data(contentsOf: Fixtures.url("tone.mp3")).prefix(1000)
            try (header + noise.prefix(16 << 20)).write(to: URL(fileURLWithPath: dir.path("header-then-noise.mp3")))

            let refused = try loadKind(client, dir.path("noise.flac"))
            #expect(["unsupported_format", "no_audio_stream"].contains(refused.kind ?? ""), "\(refused.answer)")
            let started = Date()
            let damaged = try loadKind(client, dir.path("header-then-noise.mp3"), play: true)
            if damaged.kind == nil {
                let end = try waitForStatus(client, timeout: 30) { ["ended", "failed"].contains($0.name ?? "") }
                #expect(Date().timeIntervalSince(started) < 30, "\(end)")
            }
            let pingStarted = Date()
            #expect(try bystander.call("ping")["result"] as? String == "pong")
            #expect(Date().timeIntervalSince(pingStarted) < 0.5 * Sanitizer.timeScale)
            #expect(daemon.process.isRunning)
        }

        /// A few hundred seeded mutations of the fixtures (bit flips, truncation, a zeroed
        /// header, a run of noise, extreme header fields, two formats spliced), through one
        /// unpaced daemon: every load is answered, and every loaded item ends (`ended` after
        /// playing, at a position within its duration, or `failed` with a reason). Every fifth
        /// one is loaded while the one before still plays (the outside passes' issue, §13).
        @Test func mutatedFixturesEndPlayedOrFailedWithAReason() throws {
            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            let daemon = try DaemonProcess(arguments: ["--device", "null"])
            let client = try daemon.connect()
            let aiff = dir.path("tone.aiff")
            let converted = try runTool(
                "/usr/bin/ffmpeg", ["-v", "error", "-y", "-i", Fixtures.path("tone.wav"), "-f", "aiff", aiff],
                timeout: 30)
            #expect(converted.status == 0, "\(converted.output)")
            let fixtures =
                ["tone.wav", "tone.flac", "tone.mp3", "tone.ogg", "tone.opus", "tone.m4a", "video.mp4", "mono48k.wav"]
                .map(Fixtures.path) + [aiff]
            let originals = try fixtures.map { [UInt8](try Data(contentsOf: URL(fileURLWithPath: $0))) }
            let variants = Sanitizer.active == nil ? 36 : 18
            var outcomes: [String: Int] = [:]
            for (fixtureIndex, fixture) in fixtures.enumerated() {
                let original = originals[fixtureIndex]
                for variant in 0..<variants {
                    let seed = UInt64(fixtureIndex * 1000 + variant)
                    var random = SeededRandom(seed: seed)
                    var bytes = original
                    let kind: String
                    switch variant % 6 {
                    case 0:  // scattered bit flips
                        kind = "flips"
                        for _ in 0..<(1 + Int(random.next() % 64)) {
                            let index = Int(random.next() % UInt64(bytes.count))
                            bytes[index] ^= UInt8(1 << (random.next() % 8))
                        }
                    case 1:  // truncated anywhere
                        kind = "truncated"
                        bytes.removeLast(Int(random.next() % UInt64(bytes.count)))
                    case 2:  // a zeroed header
                        kind = "zeroed-header"
                        let count = min(bytes.count, 16 + Int(random.next() % 4096))
                        bytes.replaceSubrange(0..<count, with: [UInt8](repeating: 0, count: count))
                    case 3:  // a run of noise in the middle
                        kind = "noise-run"
                        let start = Int(random.next() % UInt64(bytes.count))
                        let count = min(bytes.count - start, 1 + Int(random.next() % 8192))
                        bytes.replaceSubrange(start..<start + count, with: random.bytes(count))
                    case 4:  // extreme values in header fields (sizes, counts, rates, channels)
                        kind = "extreme-fields"
                        let extremes: [[UInt8]] = [
                            [0, 0, 0, 0], [0xFF, 0xFF, 0xFF, 0xFF], [0x7F, 0xFF, 0xFF, 0xFF], [0, 0, 0, 1],
                            [0xFF, 0xFF, 0xFF, 0xFE],
                        ]
                        for _ in 0..<(1 + Int(random.next() % 3)) {
                            let offset = Int(random.next() % UInt64(min(bytes.count - 4, 96)))
                            bytes.replaceSubrange(offset..<offset + 4, with: extremes[Int(random.next() % UInt64(extremes.count))])
                        }
                    default:  // the head of this format, the tail of another
                        kind = "spliced"
                        let other = originals[(fixtureIndex + 1 + Int(random.next() % UInt64(originals.count - 1))) % originals.count]
                        let cut = Int(random.next() % UInt64(bytes.count))
                        bytes = Array(bytes[..<cut]) + other[Int(random.next() % UInt64(other.count))...]
                    }
                    let name = (fixture as NSString).lastPathComponent
                    let path = dir.path("m\(seed)-\(kind)-\(name)")
                    try Data(bytes).write(to: URL(fileURLWithPath: path))
                    let label = "\(name) \(kind) seed \(seed)"
                    if variant % 5 == 4 {
                        // Loaded while the original still plays.
                        _ = try client.call("load", ["url": fixture, "play": true])
                    }
                    let (failedKind, answer) = try loadKind(client, path, play: true)
                    if let failedKind {
                        #expect(answer.errorMessage?.isEmpty == false, "\(label): \(answer)")
                        outcomes["failed: \(failedKind)", default: 0] += 1
                    } else {
                        #expect(["playing", "ended"].contains(answer.stateName ?? ""), "\(label): \(answer)")
                        let end = try waitForStatus(client, timeout: 10) { ["ended", "failed"].contains($0.name ?? "") }
                        if end.name == "ended", let duration = end["duration"] as? Double, let position = end["position"] as? Double {
                            #expect(position <= duration + 0.001, "\(label): ended at \(position) of \(duration)")
                        }
                        outcomes[end.name ?? "?", default: 0] += 1
                    }
                    try? FileManager.default.removeItem(atPath: path)
                }
            }
            #expect(outcomes.values.reduce(0, +) == fixtures.count * variants, "\(outcomes)")
            #expect(try client.call("ping")["result"] as? String == "pong")
            #expect(daemon.process.isRunning)
        }

        @Test func fileDeletedDuringPlaybackPlaysOnToTheEnd() throws {
            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            try FileManager.default.copyItem(atPath: Fixtures.path("tone.flac"), toPath: dir.path("doomed.flac"))
            let daemon = try DaemonProcess(arguments: ["--device", "null", "--pace", "--speed", "4"])
            let client = try daemon.connect()
            #expect(try client.call("load", ["url": dir.path("doomed.flac"), "play": true]).stateName == "playing")
            try FileManager.default.removeItem(atPath: dir.path("doomed.flac"))
            let end = try waitForStatus(client, timeout: 10) { ["ended", "failed"].contains($0.name ?? "") }
            #expect(end.name == "ended", "the open file is still readable: \(end)")
        }

        @Test func fileTruncatedDuringPlaybackEndsCleanly() throws {
            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            let path = dir.path("shrinking.wav")
            // A long file, so the decoder (a second ahead) is far from its end when it shrinks.
            let pcm = try Fixtures.wavPCM("tone.wav")
            try wavFile(pcm: pcm + pcm + pcm + pcm).write(to: URL(fileURLWithPath: path))
            let daemon = try DaemonProcess(arguments: ["--device", "null", "--pace", "--speed", "2"])
            let client = try daemon.connect()
            #expect(try client.call("load", ["url": path, "play": true]).stateName == "playing")
            _ = try waitForStatus(client) { ($0["position"] as? Double ?? 0) > 0.5 }
            #expect(truncate(path, 100_000) == 0)
            let end = try waitForStatus(client, timeout: 10) { ["ended", "failed"].contains($0.name ?? "") }
            #expect((end["position"] as? Double ?? 99) < 6, "ended early, where the data stops: \(end)")
            #expect(try client.call("ping")["result"] as? String == "pong")
            // Seeking into what is gone is answered too.
            if end.name == "ended" {
                let seek = try client.call("seek", ["position": 5.0])
                #expect(seek.result != nil || seek.errorCode != nil)
            }
            #expect(daemon.process.isRunning)
        }
    }
}

/// A 44.1 kHz stereo 16-bit WAV file around `pcm`.
func wavFile(pcm: Data) -> Data {
    func le32(_ value: Int) -> Data { withUnsafeBytes(of: UInt32(value).littleEndian) { Data($0) } }
    func le16(_ value: Int) -> Data { withUnsafeBytes(of: UInt16(value).littleEndian) { Data($0) } }
    var header = Data("RIFF".utf8) + le32(36 + pcm.count) + Data("WAVEfmt ".utf8)
    header += le32(16) + le16(1) + le16(2) + le32(44100) + le32(44100 * 4) + le16(4) + le16(16)
    header += Data("data".utf8) + le32(pcm.count)
    return header + pcm
}
