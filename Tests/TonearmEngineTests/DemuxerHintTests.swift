import CFFmpeg
import Foundation
import Testing
import TonearmTestSupport

@testable import TonearmEngine

/// A local file is opened with the demuxer its name and first bytes agree on, and a FLAC file
/// is not analysed beyond its header; what a player learns about the file is unchanged.
@Suite("Files are opened by their name and header", .timeLimit(.minutes(1)))
struct DemuxerHintTests {
    static func hint(_ name: String, _ path: String) -> String? {
        DemuxerHint.format(forFileNamed: name, readingFrom: path).map { String(cString: $0.pointee.name) }
    }

    @Test(
        "each fixture's name and header pick the demuxer the probe picks",
        arguments: [
            ("tone.flac", "flac"), ("tone.mp3", "mp3"), ("gapless-1.mp3", "mp3"), ("tone.ogg", "ogg"),
            ("tone.opus", "ogg"), ("tone.wav", "wav"), ("tone.m4a", "mov,mp4,m4a,3gp,3g2,mj2"),
            ("video.mp4", "mov,mp4,m4a,3gp,3g2,mj2"), ("late-audio.mkv", "matroska,webm"),
        ])
    func fixturesAreHinted(name: String, demuxer: String) throws {
        #expect(Self.hint(name, Fixtures.path(name)) == demuxer)
        // The same bytes under a name without an extension go through FFmpeg's full probe.
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let unnamed = directory.path("no-extension")
        try FileManager.default.copyItem(atPath: Fixtures.path(name), toPath: unnamed)
        #expect(Self.hint("no-extension", unnamed) == nil)
        let probed = try MediaDecoder(url: URL(fileURLWithPath: unnamed), cancellation: CancellationFlag())
        let hinted = try MediaDecoder(url: Fixtures.url(name), cancellation: CancellationFlag())
        #expect(probed.info.container == demuxer)
        #expect(hinted.info.container == demuxer)
        #expect(hinted.info.duration == probed.info.duration)
        #expect(hinted.info.codec == probed.info.codec)
        #expect(hinted.sourceFormat == probed.sourceFormat)
    }

    @Test("a name the header contradicts is probed, not trusted")
    func misnamedFileIsProbed() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let misnamed = directory.path("really-flac.mp3")
        try FileManager.default.copyItem(atPath: Fixtures.path("tone.flac"), toPath: misnamed)
        #expect(Self.hint("really-flac.mp3", misnamed) == nil)
        #expect(Self.hint("notmedia.mp3", Fixtures.path("notmedia.mp3")) == nil)
        let decoder = try MediaDecoder(url: URL(fileURLWithPath: misnamed), cancellation: CancellationFlag())
        #expect(decoder.info.container == "flac")
        #expect(decoder.info.codec == "flac")
        // A name without an extension the hint knows is probed as always.
        #expect(Self.hint("tone", Fixtures.path("tone.flac")) == nil)
        #expect(Self.hint("tone.xyz", Fixtures.path("tone.flac")) == nil)
    }

    @Test("an ID3v2 tag in front is skipped before the header is checked")
    func id3TagIsSkipped() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        // A 300-byte tag of padding (size 300 = 0b10_0101100 in 7-bit bytes) before FLAC data.
        var tagged = Data("ID3".utf8) + Data([4, 0, 0, 0, 0, 0x02, 0x2C]) + Data(repeating: 0, count: 300)
        tagged += try Data(contentsOf: Fixtures.url("tone.flac"))
        let path = directory.path("tagged.flac")
        try tagged.write(to: URL(fileURLWithPath: path))
        #expect(Self.hint("tagged.flac", path) == "flac")
        // The same bytes named as an MP3: what follows the tag is FLAC, so no hint.
        let renamed = directory.path("tagged.mp3")
        try tagged.write(to: URL(fileURLWithPath: renamed))
        #expect(Self.hint("tagged.mp3", renamed) == nil)
        let decoder = try MediaDecoder(url: URL(fileURLWithPath: path), cancellation: CancellationFlag())
        let plain = try MediaDecoder(url: Fixtures.url("tone.flac"), cancellation: CancellationFlag())
        #expect(decoder.info.duration == plain.info.duration)
    }

    @Test("a FLAC file read from its header says what FFmpeg's analysis says", arguments: ["tone.flac", "hires.flac", "replaygain.flac"])
    func flacHeaderMatchesTheAnalysis(name: String) throws {
        let decoder = try MediaDecoder(url: Fixtures.url(name), cancellation: CancellationFlag())
        var context: UnsafeMutablePointer<AVFormatContext>?
        #expect(avformat_open_input(&context, Fixtures.path(name), nil, nil) >= 0)
        defer { avformat_close_input(&context) }
        #expect(avformat_find_stream_info(context, nil) >= 0)
        let stream = try #require(context?.pointee.streams[0])
        let parameters = stream.pointee.codecpar.pointee
        #expect(decoder.sourceFormat.sampleRate == Int(parameters.sample_rate))
        #expect(decoder.sourceFormat.channels == Int(parameters.ch_layout.nb_channels))
        #expect(decoder.info.bits == Int(parameters.bits_per_raw_sample))
        let analysed = Double(context!.pointee.duration) / Double(AV_TIME_BASE)
        #expect(abs(try #require(decoder.info.duration) - analysed) < 0.001)
        #expect(abs(Double(try #require(decoder.info.bitRate)) - Double(context!.pointee.bit_rate)) <= 1)
    }
}
