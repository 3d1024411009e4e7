import CFFmpeg
import Foundation
import Testing
import TonearmMedia
import TonearmTestSupport

@testable import TonearmEngine

/// A scan reads tags from the container without opening a decoder: what it learns equals what
/// the player's decoder learns on opening the same file.
@Suite("Tags are read from the header as the decoder would see them", .serialized, .timeLimit(.minutes(2)))
struct HeaderTagsTests {
    /// What the scan stored before it read headers alone: the whole decoder opened.
    static func decoded(_ url: URL) -> MediaTags? {
        guard let decoder = try? MediaDecoder(url: url, cancellation: CancellationFlag()) else { return nil }
        var tags = MediaTags(entries: decoder.info.tags, duration: decoder.info.duration, replayGain: decoder.info.replayGain)
        tags.audioFormat = decoder.sourceFormat.mpdText(sourceBits: decoder.info.bits)
        return tags
    }

    static func expectSame(_ url: URL, _ name: String, unplayable: Bool = false) {
        let read = MediaTags.read(url)
        let expected = decoded(url)
        if unplayable {
            // Its header reads, its decoder does not open: listed, as MPD's scan lists it (it
            // reads the header too), and the player says why when it is played.
            #expect(read != nil && expected == nil, "\(name)")
            return
        }
        #expect((read == nil) == (expected == nil), "\(name): read \(String(describing: read)), decoded \(String(describing: expected))")
        guard var read, let expected else { return }
        #expect(read.modified != nil, "\(name)")
        read.modified = nil
        #expect(read.entries == expected.entries, "\(name)")
        #expect(read.audioFormat == expected.audioFormat, "\(name)")
        #expect(read.replayGain == expected.replayGain, "\(name)")
        switch (read.duration, expected.duration) {
        case (nil, nil): break
        case (let a?, let b?): #expect(abs(a - b) < 0.001, "\(name): \(a) against \(b)")
        default: Issue.record("\(name): duration \(String(describing: read.duration)) against \(String(describing: expected.duration))")
        }
    }

    @Test(
        "every fixture",
        arguments: [
            "tone.flac", "hires.flac", "replaygain.flac", "gapless-1.flac", "tone.mp3", "gapless-2.mp3", "truncated.mp3",
            "notmedia.mp3", "tone.ogg", "tone.opus", "gapless-3.opus", "tone.wav", "mono48k.wav", "empty.wav",
            "headeronly.wav", "tone.m4a", "gapless-1.m4a", "video.mp4", "late-audio.mkv",
        ])
    func fixture(name: String) {
        Self.expectSame(Fixtures.url(name), name)
    }

    /// Formats the fixtures leave out, made here by FFmpeg: wider samples, float, other
    /// containers and codecs, tags in each; and an HE-AAC file FFmpeg's own encoder writes with a
    /// configuration its decoder refuses.
    @Test func formatsMadeByFFmpeg() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let made: [(String, [String])] = [
            ("s24.flac", ["-c:a", "flac", "-sample_fmt", "s32", "-bits_per_raw_sample", "24"]),
            ("s24.wav", ["-c:a", "pcm_s24le"]), ("f32.wav", ["-c:a", "pcm_f32le"]), ("s16.aiff", ["-c:a", "pcm_s16be"]),
            ("alac.m4a", ["-c:a", "alac"]), ("wavpack.wv", ["-c:a", "wavpack"]), ("mp2.mp2", ["-c:a", "mp2"]),
            ("vorbis.mka", ["-c:a", "libvorbis"]),
            ("mono.mp3", ["-ac", "1", "-c:a", "libmp3lame"]), ("cbr.mp3", ["-c:a", "libmp3lame", "-write_xing", "0"]),
            ("he.m4a", ["-c:a", "aac", "-profile:a", "aac_he"]),
        ]
        var compared = 0
        for (name, codec) in made {
            let path = directory.path(name)
            let arguments =
                ["-v", "error", "-y", "-f", "lavfi", "-i", "sine=f=440:d=1.5:sample_rate=44100", "-ac", "2"]
                + codec + ["-metadata", "title=Café \(name)", "-metadata", "artist=Ünïcode", "-metadata", "track=3/12", path]
            // Waited for on a thread of its own, not one of the shared pool: a blocked pool
            // thread delays every other suite's awaits (the engine's timing tests among them).
            let status = try await withCheckedThrowingContinuation { (done: CheckedContinuation<Int32, any Error>) in
                Thread.detachNewThread {
                    let ffmpeg = Process()
                    ffmpeg.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
                    ffmpeg.arguments = arguments
                    do {
                        try ffmpeg.run()
                        ffmpeg.waitUntilExit()
                        done.resume(returning: ffmpeg.terminationStatus)
                    } catch {
                        done.resume(throwing: error)
                    }
                }
            }
            // An encoder this FFmpeg lacks makes no file: nothing to compare.
            guard status == 0 else { continue }
            Self.expectSame(URL(fileURLWithPath: path), name, unplayable: name == "he.m4a")
            compared += 1
        }
        // Debian's FFmpeg has every one of these encoders.
        #expect(compared == made.count)
    }

    /// Which files skip FFmpeg's analysis: FLAC with its STREAMINFO, MP3 with a Xing or Info
    /// frame; the rest are analysed.
    @Test(
        arguments: [
            ("tone.flac", true), ("hires.flac", true), ("tone.mp3", true), ("gapless-1.mp3", true), ("tone.ogg", false),
            ("tone.m4a", false), ("tone.wav", false),
        ])
    func theHeaderAloneSuffices(name: String, suffices: Bool) throws {
        var connection: UnsafeMutablePointer<AVIOContext>?
        let path = Fixtures.path(name)
        let (opened, budget) = try MediaDecoder.openContainer(
            path: path, openPath: path, input: InputConfiguration(), isNetwork: false, isFile: true,
            interrupt: AVIOInterruptCB(callback: nil, opaque: nil), connection: &connection, cancellation: CancellationFlag())
        var context: UnsafeMutablePointer<AVFormatContext>? = opened
        defer {
            avformat_close_input(&context)
            withExtendedLifetime(budget) {}
        }
        #expect((MediaDecoder.headerSaysAll(opened) || MediaTags.mpegHeaderSaysAll(opened)) == suffices)
    }
}
