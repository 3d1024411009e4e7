import CFFmpeg
import Foundation
import TonearmMedia

/// A scan reads each file's tags from its container, as the decoder opens it (the same demuxer
/// hint and probe), and stops there: no decoder and no resampler are opened. A FLAC file's
/// STREAMINFO says its length, rate and bits, and an MP3 file with a Xing or Info frame says its
/// length there and its rate and channels in its first frame's header: for them the header
/// alone is read. Any other file gets FFmpeg's stream analysis, whose own decoder tells what
/// the player's would.
extension MediaTags {
    /// Reads a local file's tags; nil when it cannot be opened as media (or has no audio stream a
    /// decoder exists for). Blocks on file I/O: call it from a thread of its own, never the event
    /// loop or the cooperative pool.
    package static func read(_ url: URL) -> MediaTags? {
        url.isFileURL ? read(path: url.path) : nil
    }

    /// `read(_:)` for a path (a scan names its files so, without making a URL of each).
    package static func read(path: String) -> MediaTags? {
        // Only regular files: opening a FIFO blocks until a writer comes.
        var file = stat()
        guard stat(path, &file) == 0, file.st_mode & S_IFMT == S_IFREG else { return nil }
        FFmpegLog.install
        guard var tags = readHeader(path) else { return nil }
        tags.modified = Int(file.st_mtim.tv_sec)
        return tags
    }

    private static func readHeader(_ path: String) -> MediaTags? {
        var connection: UnsafeMutablePointer<AVIOContext>?
        guard
            let (opened, budget) = try? MediaDecoder.openContainer(
                path: path, openPath: path, input: InputConfiguration(), isNetwork: false, isFile: true,
                interrupt: AVIOInterruptCB(callback: nil, opaque: nil), connection: &connection,
                cancellation: CancellationFlag())
        else { return nil }
        var context: UnsafeMutablePointer<AVFormatContext>? = opened
        defer {
            avformat_close_input(&context)
            withExtendedLifetime(budget) {}
        }
        // Right after the header: where a raw PCM file's samples start (WAV, AIFF, AU).
        let dataStart = opened.pointee.pb.map { avio_tell($0) } ?? -1
        let headerSuffices = MediaDecoder.headerSaysAll(opened) || mpegHeaderSaysAll(opened)
        if !headerSuffices && avformat_find_stream_info(opened, nil) < 0 { return nil }
        var decoder: UnsafePointer<AVCodec>?
        let best = av_find_best_stream(opened, AVMEDIA_TYPE_AUDIO, -1, -1, &decoder, 0)
        guard best >= 0, let decoder, let stream = opened.pointee.streams[Int(best)],
            let parameters = stream.pointee.codecpar, parameters.pointee.sample_rate > 0,
            parameters.pointee.ch_layout.nb_channels > 0
        else { return nil }
        let start = stream.pointee.start_time
        let info = MediaDecoder.describe(
            opened, stream: stream, streamStart: start == tonearm_av_nopts_value() ? 0 : start, decoder: decoder,
            bits: Int(parameters.pointee.bits_per_raw_sample), dataStart: dataStart, headerSuffices: headerSuffices)
        guard let sampleType = sampleType(parameters.pointee, decoder: decoder, analysed: !headerSuffices) else {
            return nil
        }
        var tags = MediaTags(entries: info.tags, duration: info.duration, replayGain: info.replayGain)
        let format = PCMFormat(
            sampleType: sampleType, sampleRate: Int(parameters.pointee.sample_rate),
            channels: Int(parameters.pointee.ch_layout.nb_channels))
        tags.audioFormat = format.mpdText(sourceBits: info.bits)
        return tags
    }

    /// Whether an MP3 file's header says all a listing needs: its length from a Xing or Info
    /// frame (the demuxer read it), and its rate and channels from the header of the first
    /// audio frame, where the demuxer left the file's position. Layer III only (a `.mp3` file
    /// of another layer is analysed). Sets the stream's rate and channel count.
    static func mpegHeaderSaysAll(_ context: UnsafeMutablePointer<AVFormatContext>) -> Bool {
        guard String(cString: context.pointee.iformat.pointee.name) == "mp3", context.pointee.nb_streams == 1,
            let stream = context.pointee.streams[0], let parameters = stream.pointee.codecpar,
            parameters.pointee.codec_id == AV_CODEC_ID_MP3, stream.pointee.duration > 0, let pb = context.pointee.pb
        else { return false }
        var bytes = [UInt8](repeating: 0, count: 4)
        guard avio_read(pb, &bytes, 4) == 4 else { return false }
        let header = bytes.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        // 11 sync bits; version (3: MPEG-1, 2: MPEG-2, 0: MPEG-2.5); layer (1: III); the rate's
        // index; the channel mode (3: mono).
        let version = header >> 19 & 3
        let rateIndex = Int(header >> 10 & 3)
        guard header & 0xFFE0_0000 == 0xFFE0_0000, version != 1, header >> 17 & 3 == 1, rateIndex != 3 else {
            return false
        }
        let rate = [44100, 48000, 32000][rateIndex] >> (version == 3 ? 0 : version == 2 ? 1 : 2)
        parameters.pointee.sample_rate = Int32(rate)
        av_channel_layout_uninit(&parameters.pointee.ch_layout)
        parameters.pointee.ch_layout.order = AV_CHANNEL_ORDER_UNSPEC
        parameters.pointee.ch_layout.nb_channels = header >> 6 & 3 == 3 ? 1 : 2
        return true
    }

    /// The sample type the player's decoder gives: its own formats say it when they are all of
    /// one type (the analysis may have used another decoder of the same codec: MP2's float one,
    /// where the player opens the fixed-point one). Else, unanalysed (FLAC), 16-bit samples up to
    /// 16 bits and 32-bit ones above, as FLAC's decoder gives; analysed, the analysis's format.
    /// nil when the analysis found no decoder that opens the stream (the player could not
    /// play it either).
    private static func sampleType(_ parameters: AVCodecParameters, decoder: UnsafePointer<AVCodec>, analysed: Bool)
        -> SampleType?
    {
        if analysed && parameters.format < 0 { return nil }
        if let formats = decoder.pointee.sample_fmts {
            var types = Set<SampleType>()
            var index = 0
            while formats[index] != AV_SAMPLE_FMT_NONE {
                types.insert(SampleType.nearest(to: formats[index]))
                index += 1
            }
            if types.count == 1, let only = types.first { return only }
        }
        if !analysed { return parameters.bits_per_raw_sample > 16 ? .s32 : .s16 }
        return SampleType.nearest(to: AVSampleFormat(rawValue: parameters.format))
    }
}
