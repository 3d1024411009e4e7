import Foundation
import Testing
import TonearmMedia
import TonearmTestSupport

@testable import TonearmEngine

/// EBU R128 measured by libebur128 on signals made here: EBU Tech 3341's sine tests, whose
/// loudness is known by construction, and pink noise held to FFmpeg's own ebur128 filter.
@Suite("Loudness is measured as EBU R128 says", .timeLimit(.minutes(2)))
struct LoudnessTests {
    /// A 32-bit float WAV of `channels` channels, each sample `sample(frame, channel)`.
    static func writeWAV(
        _ path: String, rate: Int = 48000, channels: Int = 2, seconds: Double,
        _ sample: (Int, Int) -> Float
    ) throws {
        let frames = Int(Double(rate) * seconds)
        var data = Data()
        func u32(_ value: Int) { withUnsafeBytes(of: UInt32(value).littleEndian) { data.append(contentsOf: $0) } }
        func u16(_ value: Int) { withUnsafeBytes(of: UInt16(value).littleEndian) { data.append(contentsOf: $0) } }
        let bytes = frames * channels * 4
        data.append(contentsOf: Array("RIFF".utf8))
        u32(36 + bytes)
        data.append(contentsOf: Array("WAVEfmt ".utf8))
        u32(16)
        u16(3)
        u16(channels)
        u32(rate)
        u32(rate * channels * 4)
        u16(channels * 4)
        u16(32)
        data.append(contentsOf: Array("data".utf8))
        u32(bytes)
        var samples = [Float](repeating: 0, count: frames * channels)
        for frame in 0..<frames { for channel in 0..<channels { samples[frame * channels + channel] = sample(frame, channel) } }
        samples.withUnsafeBytes { data.append(contentsOf: $0) }
        try data.write(to: URL(fileURLWithPath: path))
    }

    /// A sine of `frequency` Hz whose peak is `dBFS` below full scale.
    static func sine(_ frequency: Double, dBFS: Double, rate: Int = 48000) -> (Int, Int) -> Float {
        let amplitude = pow(10, dBFS / 20)
        return { frame, _ in Float(amplitude * sin(2 * Double.pi * frequency * Double(frame) / Double(rate))) }
    }

    /// EBU Tech 3341, tests 1 and 2: a stereo 1 kHz sine at −23 and −33 dBFS in both channels
    /// measures −23.0 and −33.0 LUFS.
    @Test(arguments: [-23.0, -33.0])
    func aSineMeasuresItsReference(dBFS: Double) throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path("sine.wav")
        try Self.writeWAV(path, seconds: 20, Self.sine(1000, dBFS: dBFS))
        let loudness = try #require(try Loudness.measure(URL(fileURLWithPath: path)))
        #expect(abs(loudness.integrated - dBFS) <= 0.1, "\(loudness)")
        #expect(abs(loudness.truePeak - dBFS) <= 0.2, "a sine's true peak is its peak: \(loudness)")
        #expect(loudness.range < 0.5, "a steady tone has no loudness range: \(loudness)")
    }

    /// Pink noise, encoded as FLAC at 44.1 kHz, measures what FFmpeg's ebur128 filter says of it.
    @Test func pinkNoiseMeasuresAsFFmpegSays() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path("pink.flac")
        let made = try runTool(
            "/usr/bin/ffmpeg",
            [
                "-v", "error", "-y", "-f", "lavfi", "-i", "anoisesrc=color=pink:amplitude=0.3:duration=12:seed=7",
                "-ar", "44100", "-ac", "2", path,
            ], timeout: 60)
        try #require(made.status == 0, "\(made.output)")
        let ffmpeg = try FFmpegLoudness(file: path)
        let (reference, peak) = (ffmpeg.integrated, ffmpeg.truePeak)
        let loudness = try #require(try Loudness.measure(URL(fileURLWithPath: path)))
        #expect(abs(loudness.integrated - reference) <= 0.1, "ours \(loudness), FFmpeg's I \(reference)")
        #expect(abs(loudness.truePeak - peak) <= 0.5, "ours \(loudness), FFmpeg's true peak \(peak)")
    }

    @Test func silenceHasNoLoudness() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path("silence.wav")
        try Self.writeWAV(path, seconds: 3) { _, _ in 0 }
        #expect(try Loudness.measure(URL(fileURLWithPath: path)) == nil)
        #expect(throws: EngineFailure.self) { try Loudness.measure(URL(fileURLWithPath: directory.path("none.wav"))) }
    }
}
