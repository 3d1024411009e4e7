import Foundation
import Logging
import Testing
import TonearmEngine
import TonearmMedia
import TonearmTestSupport

@testable import TonearmPlayer

/// What the player has measured ahead, and the level of an item started before its
/// measurement, on the real engine (`null` device) and real files.
@Suite("Player: loudness measured ahead and provisional levels", .serialized, .timeLimit(.minutes(1)))
struct LoudnessAheadTests {
    private func makePlayer(pace: Bool = false, speed: Double = 1) -> Player { Player.onNullDevice(pace: pace, speed: speed) }

    /// A 16-bit stereo 44.1 kHz WAV: a 1 kHz sine whose peak is `dBFS` (a sine at −6 dBFS
    /// measures about −6 LUFS: 12 LU above the −18 target).
    private func writeSine(_ path: String, dBFS: Double, seconds: Double) throws {
        let rate = 44100
        let frames = Int(seconds * Double(rate))
        var data = Data()
        func u32(_ v: Int) { withUnsafeBytes(of: UInt32(v).littleEndian) { data.append(contentsOf: $0) } }
        func u16(_ v: Int) { withUnsafeBytes(of: UInt16(v).littleEndian) { data.append(contentsOf: $0) } }
        data.append(contentsOf: Array("RIFF".utf8))
        u32(36 + frames * 4)
        data.append(contentsOf: Array("WAVEfmt ".utf8))
        u32(16)
        u16(1)
        u16(2)
        u32(rate)
        u32(rate * 4)
        u16(4)
        u16(16)
        data.append(contentsOf: Array("data".utf8))
        u32(frames * 4)
        let amplitude = pow(10, dBFS / 20) * 32767
        var samples = [Int16](repeating: 0, count: frames * 2)
        for frame in 0..<frames {
            let value = Int16(amplitude * sin(2 * Double.pi * 1000 * Double(frame) / Double(rate)))
            samples[2 * frame] = value
            samples[2 * frame + 1] = value
        }
        samples.withUnsafeBytes { data.append(contentsOf: $0) }
        try data.write(to: URL(fileURLWithPath: path))
    }

    /// Distinct files (the keeper knows a file by its URL): links to one fixture.
    private func links(_ count: Int, in directory: TemporaryDirectory) throws -> [URL] {
        try (0..<count).map { index in
            let path = directory.path("\(index).flac")
            try FileManager.default.createSymbolicLink(atPath: path, withDestinationPath: Fixtures.path("tone.flac"))
            return URL(fileURLWithPath: path)
        }
    }

    /// (A) ReplayGain off measures no queue item (a 10,000-song add cost a minute of CPU);
    /// `auto` measures the current and next items, not the rest.
    @Test func onlyAModeThatLevelsByLoudnessMeasuresAndOnlyTheCurrentAndNext() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let player = makePlayer()
        let urls = try links(4, in: directory)
        _ = try player.add(urls.map { (url: $0, title: nil) })
        // A 3 s tone measures in about 10 ms: a fifth of a second is plenty to see it was not.
        try await Task.sleep(for: .milliseconds(300))
        #expect(urls.allSatisfy { player.loudness(of: $0) == nil }, "mode off: nothing measured")
        _ = player.setReplayGain(mode: .auto)
        #expect(await eventually { player.loudness(of: urls[0]) != nil && player.loudness(of: urls[1]) != nil })
        try await Task.sleep(for: .milliseconds(300))
        #expect(player.loudness(of: urls[2]) == nil && player.loudness(of: urls[3]) == nil, "only the current and next")
    }

    /// (B) An item started before it was measured is leveled by its opening's loudness, and
    /// keeps that level when its whole measurement lands while it plays.
    @Test func anItemStartedUnmeasuredIsLeveledByItsOpeningToItsEnd() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path("loud.wav")
        try writeSine(path, dBFS: -6, seconds: 60)  // measured whole in ~0.2 s: after its first write
        let player = makePlayer(pace: true, speed: 2)
        _ = player.setReplayGain(mode: .loudness)
        let added = try player.add([(url: URL(fileURLWithPath: path), title: nil)])
        let id = try #require(added.items.first?.id)
        // From 1 s: not measured on the way, so the measuring thread measures it meanwhile.
        _ = try await player.play(id: id, start: 1)
        let early = try #require(player.status.loudness)
        #expect(early.gain.source == .provisional && abs(early.gain.decibels - (-12)) < 0.3, "\(early)")
        #expect(await eventually { player.loudness(of: URL(fileURLWithPath: path)) != nil }, "measured whole meanwhile")
        let late = try #require(player.status.loudness)
        #expect(late.gain == early.gain, "held for the whole item: \(early) then \(late)")
    }
}
