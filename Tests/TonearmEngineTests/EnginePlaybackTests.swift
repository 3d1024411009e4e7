import Foundation
import Testing
import TonearmEngine
import TonearmMedia
import TonearmTestSupport

@Suite("Engine plays real files through ALSA", .serialized, .timeLimit(.minutes(1)))
struct EnginePlaybackTests {
    private func play(_ fixture: String, config: (String) -> OutputConfiguration = { OutputConfiguration(device: $0) })
        async throws -> (pcm: Data, info: MediaInfo?, recorder: EngineRecorder, dir: TemporaryDirectory)
    {
        let dir = try TemporaryDirectory()
        let engine = PlayerEngine(configuration: config(dir.fileDevice("out.raw")))
        let recorder = EngineRecorder(engine)
        engine.load(url: Fixtures.url(fixture))
        #expect(await eventually { engine.status == .readyToPlay || recorder.failure != nil })
        engine.play()
        #expect(await eventually { recorder.ended || recorder.failure != nil }, "\(fixture) did not end")
        let info = engine.mediaInfo
        engine.shutdown()
        await engine.waitUntilShutDown()
        let pcm = try Data(contentsOf: URL(fileURLWithPath: dir.path("out.raw")))
        return (pcm, info, recorder, dir)
    }

    @Test(arguments: ["tone.wav", "tone.flac"])
    func losslessPlaybackIsBitExact(_ fixture: String) async throws {
        let result = try await play(fixture)
        defer { result.dir.remove() }
        let reference = try Fixtures.wavPCM("tone.wav")
        #expect(result.recorder.failure == nil)
        #expect(result.pcm.count == reference.count)
        #expect(result.pcm == reference, "\(fixture): PCM differs from the WAV's data")
    }

    /// `load`, the device released before `play` (`release_after_s = 0`), then `play`: the item
    /// comes out as a load played at once gives it, sample for sample. (The release sent the
    /// decoder back to frame 0, and FFmpeg's seek there is not exact: an MP3's start skip, an
    /// Opus pre-skip, AAC's priming.) The MP3 is mono 8 kHz with a LAME header, resampled.
    @Test(arguments: ["tone.opus", "tone.m4a", "mono8k.mp3"])
    func aLoadReleasedBeforePlayIsBitExact(_ fixture: String) async throws {
        let media = try TemporaryDirectory()
        defer { media.remove() }
        var url = Fixtures.url(fixture)
        if fixture == "mono8k.mp3" {
            url = URL(fileURLWithPath: media.path(fixture))
            let made = try runTool(
                "/usr/bin/ffmpeg",
                [
                    "-v", "error", "-y", "-f", "lavfi", "-i", "sine=f=440:d=2:sample_rate=8000",
                    "-ac", "1", "-c:a", "libmp3lame", url.path,
                ], timeout: 60)
            try #require(made.status == 0, "ffmpeg: \(made.output)")
        }
        func capture(release: Double?) async throws -> Data {
            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            let engine = PlayerEngine(
                configuration: OutputConfiguration(
                    device: dir.fileDevice("out.raw"), sampleRate: 48000,
                    sampleType: .s16, releaseAfterSeconds: release))
            let recorder = EngineRecorder(engine)
            engine.load(url: url)
            #expect(await eventually { engine.status == .readyToPlay })
            if release != nil {
                #expect(await eventually { recorder.contains { if case .deviceReleased = $0 { true } else { false } } })
            }
            engine.play()
            #expect(await eventually { recorder.ended || recorder.failure != nil })
            engine.shutdown()
            await engine.waitUntilShutDown()
            return try Data(contentsOf: URL(fileURLWithPath: dir.path("out.raw")))
        }
        let direct = try await capture(release: nil)
        let released = try await capture(release: 0)
        #expect(direct.count > 0)
        #expect(released == direct, "\(fixture): \(released.count) bytes after a release, \(direct.count) without")
    }

    /// A play that comes after the end (its caller had not heard of the end yet) is answered
    /// with the end again, not a silent wait that the timeline calls playing.
    @Test func aPlayAfterTheEndEndsAgain() async throws {
        let engine = PlayerEngine(configuration: OutputConfiguration(device: "null"))
        let recorder = EngineRecorder(engine)
        engine.load(url: Fixtures.url("tone.wav"))
        #expect(await eventually { engine.status == .readyToPlay })
        engine.play()
        #expect(await eventually { recorder.ended })
        engine.play()
        let ends = { recorder.recorded.filter { if case .didPlayToEnd = $0 { true } else { false } }.count }
        #expect(await eventually { ends() == 2 }, "\(recorder.recorded)")
        #expect(await eventually { engine.timeControlStatus == .paused })
        engine.shutdown()
        await engine.waitUntilShutDown()
    }

    /// An item opened while another plays waits, ready, until `play`; opened `playing`, it plays.
    @Test func openCarriesNoPlayStateOver() async throws {
        let engine = PlayerEngine(configuration: OutputConfiguration(device: "null", pace: true))
        let recorder = EngineRecorder(engine)
        engine.load(url: Fixtures.url("tone.wav"))
        #expect(await eventually { engine.status == .readyToPlay })
        engine.play()
        #expect(await eventually { engine.timeControlStatus == .playing })
        let second = EngineItem.fresh(Fixtures.url("tone.flac"))
        engine.open(second)
        #expect(await eventually { recorder.contains { if case .ready(second.id) = $0 { true } else { false } } })
        try await Task.sleep(for: .milliseconds(300))
        #expect(engine.timeControlStatus == .paused)
        #expect(engine.heard.seconds == 0, "nothing of it was played")
        let third = EngineItem.fresh(Fixtures.url("tone.wav"))
        engine.open(third, playing: true)
        #expect(await eventually { engine.heard.itemID == third.id && engine.heard.seconds > 0.05 })
        engine.shutdown()
        await engine.waitUntilShutDown()
    }

    @Test func mediaInfoAndTags() async throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let engine = PlayerEngine(configuration: OutputConfiguration(device: "null"))
        engine.load(url: Fixtures.url("tone.flac"))
        #expect(await eventually { engine.status == .readyToPlay })
        let info = try #require(engine.mediaInfo)
        #expect(info.codec == "flac")
        #expect(info.sampleRate == 44100 && info.channels == 2)
        #expect(info.title == "Test Tone" && info.artist == "Tonearm" && info.album == "Fixtures")
        #expect(abs((info.duration ?? 0) - 3.0) < 0.01)
        #expect(info.outputFormat == PCMFormat(sampleType: .s16, sampleRate: 44100, channels: 2))
    }

    @Test(arguments: ["tone.mp3", "tone.ogg", "tone.opus", "tone.m4a", "video.mp4", "mono48k.wav", "hires.flac"])
    func lossyAndOtherFormatsPlayToTheEnd(_ fixture: String) async throws {
        let result = try await play(fixture)
        defer { result.dir.remove() }
        let info = try #require(result.info)
        #expect(result.recorder.failure == nil)
        let frames = Double(result.pcm.count) / Double(info.outputFormat.bytesPerFrame)
        let seconds = frames / Double(info.outputFormat.sampleRate)
        #expect(abs(seconds - (info.duration ?? 0)) < 0.1, "\(fixture): played \(seconds) s of \(info.duration ?? 0)")
    }

    @Test func configuredFormatIsConvertedBySwresample() async throws {
        let result = try await play("tone.wav") {
            OutputConfiguration(device: $0, sampleRate: 48000, channels: 1, sampleType: .float)
        }
        defer { result.dir.remove() }
        let info = try #require(result.info)
        #expect(info.outputFormat == PCMFormat(sampleType: .float, sampleRate: 48000, channels: 1))
        #expect(info.sampleRate == 44100 && info.channels == 2, "media info describes the source")
        let samples = result.pcm.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        #expect(abs(samples.count - 3 * 48000) < 64, "3 s at 48 kHz mono: \(samples.count) samples")
        let peak = samples.map(abs).max() ?? 0
        #expect(peak > 0.05 && peak <= 1.0, "a real, unclipped signal: peak \(peak)")
    }

    @Test(arguments: [
        ("missing.flac", EngineFailure.Kind.fileNotFound), ("empty.wav", .unsupportedFormat),
        ("notmedia.mp3", .unsupportedFormat), ("headeronly.wav", .unsupportedFormat),
    ])
    func brokenFilesFailWithAReason(_ fixture: String, _ kind: EngineFailure.Kind) async throws {
        let engine = PlayerEngine(configuration: OutputConfiguration(device: "null"))
        let recorder = EngineRecorder(engine)
        engine.load(url: Fixtures.url(fixture))
        #expect(await eventually { recorder.failure != nil })
        #expect(recorder.failure?.kind == kind, "\(fixture): \(String(describing: recorder.failure))")
        #expect(recorder.failure?.message.contains(fixture) == true, "the reason names the file")
        if case .failed = engine.status {} else { Issue.record("status should be failed") }
    }

    @Test func missingDeviceIsAClearError() async throws {
        let engine = PlayerEngine(configuration: OutputConfiguration(device: "hw:99,0", waitForDevice: false))
        let recorder = EngineRecorder(engine)
        engine.load(url: Fixtures.url("tone.wav"))
        #expect(await eventually { recorder.failure != nil })
        #expect(recorder.failure?.kind == .deviceUnavailable)
        #expect(recorder.failure?.message.contains("hw:99,0") == true)
    }
}

@Suite("Engine gain stage: volume and ReplayGain", .serialized, .timeLimit(.minutes(1)))
struct EngineGainTests {
    /// Plays `fixture` to its end into a `file` device with the gain settings given; returns the PCM as samples.
    private func capture(_ fixture: String, volume: Double = 1, replayGain: ReplayGainSettings = ReplayGainSettings())
        async throws -> [Int16]
    {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let engine = PlayerEngine(configuration: OutputConfiguration(device: dir.fileDevice("out.raw")))
        let recorder = EngineRecorder(engine)
        engine.setVolume(volume)
        engine.setReplayGain(replayGain)
        engine.load(url: Fixtures.url(fixture))
        #expect(await eventually { engine.status == .readyToPlay })
        engine.play()
        #expect(await eventually { recorder.ended })
        engine.shutdown()
        await engine.waitUntilShutDown()
        let data = try Data(contentsOf: URL(fileURLWithPath: dir.path("out.raw")))
        return data.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
    }

    private var reference: [Int16] {
        get throws { try Fixtures.wavPCM("tone.wav").withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) } }
    }

    @Test func fullVolumeWithoutReplayGainIsBitPerfect() async throws {
        #expect(try await capture("replaygain.flac") == reference)
    }

    @Test func volumeScalesEverySampleAfterAShortRamp() async throws {
        let samples = try await capture("tone.wav", volume: 0.25)
        let reference = try reference
        #expect(samples.count == reference.count)
        // After the ~5 ms ramp (220 frames at 44.1 kHz) every sample is the reference × 0.25, rounded.
        let mismatches = (2 * 300..<reference.count).filter { abs(Int(samples[$0]) - Int((Double(reference[$0]) * 0.25).rounded())) > 0 }
        #expect(mismatches.isEmpty, "\(mismatches.count) samples off")
        // The ramp: no step larger than the signal's own at the start (no click).
        #expect(abs(Int(samples[0])) <= abs(Int(reference[0])))
    }

    @Test(arguments: [(ReplayGainMode.track, 0.5), (.album, 0.25), (.off, 1.0)])
    func replayGainFollowsTheTagsAndTheMode(_ mode: ReplayGainMode, _ factor: Double) async throws {
        let samples = try await capture("replaygain.flac", replayGain: ReplayGainSettings(mode: mode))
        let reference = try reference
        let peak = { (values: ArraySlice<Int16>) in values.map { abs(Int($0)) }.max() ?? 0 }
        let ratio = Double(peak(samples[44100...])) / Double(peak(reference[44100...]))
        #expect(abs(ratio - factor) < 0.01, "\(mode): peak ratio \(ratio), expected \(factor)")
    }

    @Test func thePeakTagKeepsAPreampFromClipping() {
        let tags = ReplayGainInfo(trackGain: -3, trackPeak: 0.9)
        let settings = ReplayGainSettings(mode: .track, preampDB: 10)
        // −3 + 10 = +7 dB would take a 0.9 peak past full scale; the gain stops at −20·log10(0.9).
        #expect(abs(settings.gain(tags: tags, loudness: nil, prefersAlbum: false).decibels - (-20 * log10(0.9))) < 1e-9)
        #expect(ReplayGainSettings(mode: .off).gain(tags: tags, loudness: nil, prefersAlbum: true).decibels == 0)
        #expect(
            ReplayGainSettings(mode: .auto).gain(tags: ReplayGainInfo(trackGain: -1, albumGain: -2), loudness: nil, prefersAlbum: true)
                .decibels == -2)
        #expect(
            ReplayGainSettings(mode: .auto).gain(tags: ReplayGainInfo(trackGain: -1, albumGain: -2), loudness: nil, prefersAlbum: false)
                .decibels == -1)
    }
}
