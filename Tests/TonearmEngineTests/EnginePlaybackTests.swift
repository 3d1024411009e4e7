import Foundation
import Testing
import TonearmEngine
import TonearmTestSupport

@Suite("Engine plays real files through ALSA", .serialized, .timeLimit(.minutes(1)))
struct EnginePlaybackTests {
    private func play(_ fixture: String, config: (String) -> OutputConfiguration = { OutputConfiguration(device: $0) })
        async throws -> (pcm: Data, info: MediaInfo?, recorder: EngineRecorder, dir: TemporaryDirectory) {
        let dir = try TemporaryDirectory()
        let engine = PlayerEngine(configuration: config(dir.fileDevice("out.raw")))
        let recorder = EngineRecorder(engine)
        engine.load(url: Fixtures.url(fixture))
        #expect(await eventually { engine.status == .readyToPlay || recorder.failure != nil })
        engine.play()
        #expect(await eventually { recorder.ended || recorder.failure != nil }, "\(fixture) did not end")
        let info = engine.mediaInfo
        engine.stop()
        await engine.waitUntilReleased()
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

    @Test(arguments: [("missing.flac", EngineFailure.Kind.fileNotFound), ("empty.wav", .unsupportedFormat),
                      ("notmedia.mp3", .unsupportedFormat), ("headeronly.wav", .unsupportedFormat)])
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
        let engine = PlayerEngine(configuration: OutputConfiguration(device: "hw:99,0"))
        let recorder = EngineRecorder(engine)
        engine.load(url: Fixtures.url("tone.wav"))
        #expect(await eventually { recorder.failure != nil })
        #expect(recorder.failure?.kind == .deviceUnavailable)
        #expect(recorder.failure?.message.contains("hw:99,0") == true)
    }
}
