import CFFmpeg
import Foundation
import Synchronization
import TonearmMedia

/// Demux + decode + convert of one media file. Owns every FFmpeg pointer of the item; not
/// Sendable: it is created, used and freed on that item's decoder thread only.
final class MediaDecoder {
    private(set) var formatContext: UnsafeMutablePointer<AVFormatContext>?
    /// A network source's connection, opened by us (FFmpeg does not close it with the context).
    private var connection: UnsafeMutablePointer<AVIOContext>?
    /// The context's `io_open` budget; it outlives the context (freed first, in deinit).
    private var requestBudget: RequestBudget?
    private var codecContext: UnsafeMutablePointer<AVCodecContext>?
    private var resampler: OpaquePointer?
    private var packet: UnsafeMutablePointer<AVPacket>?
    private var frame: UnsafeMutablePointer<AVFrame>?
    private let streamIndex: Int32
    private let streamTimeBase: AVRational
    private let streamStart: Int64
    let cancellation: CancellationFlag
    /// Checks each HTTP request FFmpeg sends for this item; the thread's gate during each call.
    private let gate: RequestGate

    /// Converted output of the last `decodeNext`; grown only when a larger frame arrives.
    private(set) var scratch: UnsafeMutableRawPointer
    private var scratchCapacityFrames: Int
    private var draining = false
    private(set) var finished = false

    let sourceFormat: PCMFormat
    private(set) var outputFormat: PCMFormat
    typealias Info = (
        duration: Double?, codec: String, container: String, bits: Int?, bitRate: Int?,
        tags: [MediaTags.Entry], replayGain: ReplayGainInfo?
    )
    let info: Info

    /// The latest ICY StreamTitle read, and whether `takeStreamTitle` has handed it on.
    private var streamTitle: String?
    private var streamTitleTaken = true

    /// A changed stream title since the last call, once.
    func takeStreamTitle() -> String? {
        guard !streamTitleTaken else { return nil }
        streamTitleTaken = true
        return streamTitle
    }

    /// Output-frame index of the first sample `decodeNext` will produce; nil until a timestamped frame says.
    private(set) var nextFramePosition: Int64 = 0

    enum Chunk {
        /// `frames` converted frames, the first of which is track frame `position`: in the
        /// destination `decodeNext` was given when `inDestination`, else in `scratch`.
        case frames(Int, position: Int64, inDestination: Bool)
        case endOfStream
    }

    /// Where `decodeNext` may convert to instead of `scratch`: memory for `frames` frames of
    /// `outputFormat`. Used when the whole converted frame fits (the decoder's chunk being filled),
    /// which saves copying every frame out of `scratch` (for float stereo 8 bytes a frame: 212 MB
    /// over ten minutes).
    struct Destination {
        let bytes: UnsafeMutableRawPointer
        let frames: Int
    }

    /// A source read over the network (http, https): buffered, reconnected, never stat-checked.
    let isNetwork: Bool
    /// How long a network request may take to answer (`input.timeout_ms`).
    private let networkTimeout: Double
    /// A network source with no end and no seeking (a radio stream): it is rejoined, not resumed.
    private(set) var isLive = false

    init(url: URL, input: InputConfiguration = InputConfiguration(), cancellation: CancellationFlag) throws(EngineFailure) {
        self.cancellation = cancellation
        networkTimeout = input.timeoutSeconds
        gate = RequestGate(input: input, cancellation: cancellation)
        let previousGate = gate.enter()
        defer { RequestGate.leave(restoring: previousGate) }
        FFmpegLog.install
        let path = url.isFileURL ? url.path : url.absoluteString
        let scheme = InputConfiguration.scheme(of: url)
        guard input.allows(url) else {
            throw EngineFailure(
                .permissionDenied, "the protocol '\(scheme)' is not allowed (input.protocols: \(input.protocols.joined(separator: ", ")))")
        }
        isNetwork = InputConfiguration.isNetwork(url)
        if isNetwork { Self.networkInit }
        // With `input.roots`, a local file is opened here first and FFmpeg is handed that open
        // file (/proc/self/fd/N names the same inode): the roots are checked on the file actually
        // opened, so a file swapped for a link after it was queued cannot lead outside them.
        var localFile: Int32 = -1
        defer { if localFile >= 0 { close(localFile) } }
        if url.isFileURL {
            try Self.checkRegularReadableFile(path)
            // Only with roots: FFmpeg then sees a path without the file's extension, which a
            // few formats are told apart by; without roots it opens the path itself.
            if !input.roots.isEmpty { localFile = try Self.openInsideRoots(path, roots: input.roots) }
        }
        let openPath = localFile >= 0 ? "/proc/self/fd/\(localFile)" : path

        let interrupt = AVIOInterruptCB(
            callback: { opaque in
                guard let opaque else { return 0 }
                return Unmanaged<CancellationFlag>.fromOpaque(opaque).takeUnretainedValue().shouldInterrupt ? 1 : 0
            }, opaque: Unmanaged.passUnretained(cancellation).toOpaque())
        if isNetwork { cancellation.setDeadline(secondsFromNow: input.timeoutSeconds) }
        defer { cancellation.setDeadline(secondsFromNow: nil) }
        // A network source's connection is opened first, on its own: its failures (refused,
        // 404, a redirect it may not follow) are told apart from the content's, and where the
        // redirects led is checked before a byte of the body is parsed.
        var connection: UnsafeMutablePointer<AVIOContext>?
        if isNetwork {
            connection = try Self.connect(path, input: input, interrupt: interrupt, gate: gate, cancellation: cancellation)
        }
        let (context, budget) = try Self.openContainer(
            path: path, openPath: openPath, input: input, isNetwork: isNetwork, isFile: url.isFileURL, interrupt: interrupt,
            connection: &connection, cancellation: cancellation)
        requestBudget = budget
        self.connection = connection
        // Right after the header: where a raw PCM file's samples start (WAV, AIFF, AU).
        let dataStart = context.pointee.pb.map { avio_tell($0) } ?? -1
        // Until init completes, the handles live in locals and are freed here on failure.
        func failAndFree(_ failure: EngineFailure, codec: UnsafeMutablePointer<AVCodecContext>? = nil) -> EngineFailure {
            var codecToFree = codec
            if codecToFree != nil { avcodec_free_context(&codecToFree) }
            var ctx: UnsafeMutablePointer<AVFormatContext>? = context
            avformat_close_input(&ctx)
            avio_closep(&connection)
            return failure
        }

        // FFmpeg's stream analysis decodes the first packets to learn what the header did not
        // say. A FLAC header (STREAMINFO) says all of it, and skipping the analysis saves the
        // decoder's second opening and about 1.4 MiB of FFmpeg's pages (its option lookup).
        let headerSuffices = Self.headerSaysAll(context)
        let infoResult = headerSuffices ? 0 : avformat_find_stream_info(context, nil)
        if let refusal = cancellation.refusal { throw failAndFree(EngineFailure(.permissionDenied, "\(path): \(refusal)")) }
        if let budget, budget.refused > 0 {
            throw failAndFree(EngineFailure(.unsupportedFormat, "\(path): \(budget.description)"))
        }
        if infoResult < 0 {
            if isNetwork && !Self.isContentError(infoResult) && infoResult != tonearm_averror(EINVAL) {
                throw failAndFree(
                    EngineFailure(.network, "\(path): the connection failed while probing: \(Self.describe(infoResult, cancellation))"))
            }
            throw failAndFree(EngineFailure(.unsupportedFormat, "cannot read stream info of \(path): \(FFmpegError.describe(infoResult))"))
        }
        var decoder: UnsafePointer<AVCodec>?
        let best = av_find_best_stream(context, AVMEDIA_TYPE_AUDIO, -1, -1, &decoder, 0)
        if best < 0 {
            let reason = best == tonearm_averror_decoder_not_found() ? "no decoder for its audio stream" : "no audio stream"
            throw failAndFree(
                EngineFailure(
                    best == tonearm_averror_decoder_not_found() ? .unsupportedFormat : .noAudioStream,
                    "\(path): \(reason)"))
        }
        guard let decoder else {
            throw failAndFree(EngineFailure(.unsupportedFormat, "\(path): no decoder for its audio stream"))
        }
        // Only the audio stream is demuxed further: a video track is skipped, not decoded.
        for index in 0..<Int(context.pointee.nb_streams) where index != Int(best) {
            context.pointee.streams[index]!.pointee.discard = AVDISCARD_ALL
        }
        let stream = context.pointee.streams[Int(best)]!
        streamIndex = best
        streamTimeBase = stream.pointee.time_base
        let start = stream.pointee.start_time
        streamStart = start == tonearm_av_nopts_value() ? 0 : start

        guard let codec = avcodec_alloc_context3(decoder) else {
            throw failAndFree(EngineFailure(.decodeFailed, "out of memory"))
        }
        avcodec_parameters_to_context(codec, stream.pointee.codecpar)
        codec.pointee.pkt_timebase = stream.pointee.time_base
        let codecOpen = avcodec_open2(codec, decoder, nil)
        if codecOpen < 0 {
            throw failAndFree(
                EngineFailure(
                    .unsupportedFormat,
                    "\(path): cannot open \(String(cString: decoder.pointee.name)) decoder: \(FFmpegError.describe(codecOpen))"),
                codec: codec)
        }
        guard codec.pointee.sample_rate > 0, codec.pointee.ch_layout.nb_channels > 0 else {
            throw failAndFree(EngineFailure(.unsupportedFormat, "\(path): audio stream has no sample rate or channels"), codec: codec)
        }
        formatContext = context
        codecContext = codec

        sourceFormat = PCMFormat(
            sampleType: SampleType.nearest(to: codec.pointee.sample_fmt),
            sampleRate: Int(codec.pointee.sample_rate),
            channels: Int(codec.pointee.ch_layout.nb_channels))
        outputFormat = sourceFormat

        info = Self.describe(
            context, stream: stream, streamStart: streamStart, decoder: decoder, bits: Int(codec.pointee.bits_per_raw_sample),
            dataStart: dataStart,
            headerSuffices: headerSuffices)
        let duration = info.duration

        // Live means without end: no duration and no length. A file on a server that cannot
        // seek (no ranges) still has an end, where it ends; it is not rejoined from its start.
        let length = context.pointee.pb.map { avio_size($0) } ?? -1
        isLive = isNetwork && duration == nil && length <= 0
        packet = av_packet_alloc()
        frame = av_frame_alloc()
        scratchCapacityFrames = 8192
        scratch = UnsafeMutableRawPointer.allocate(byteCount: scratchCapacityFrames * 8 * 8, alignment: 16)
    }

    deinit {
        scratch.deallocate()
        if resampler != nil { swr_free(&resampler) }
        if frame != nil { av_frame_free(&frame) }
        if packet != nil { av_packet_free(&packet) }
        if codecContext != nil { avcodec_free_context(&codecContext) }
        if formatContext != nil { avformat_close_input(&formatContext) }
        if connection != nil { avio_closep(&connection) }
    }

    /// Sets up conversion from the decoder's format to `format` (what the device granted).
    func configureOutput(_ format: PCMFormat) throws(EngineFailure) {
        guard let codec = codecContext else { throw EngineFailure(.decodeFailed, "decoder closed") }
        outputFormat = format
        try buildResampler(
            layout: &codec.pointee.ch_layout, sampleFormat: codec.pointee.sample_fmt,
            sampleRate: codec.pointee.sample_rate)
    }

    /// What the resampler converts from: a damaged or odd stream may change it mid-way (an MP3
    /// frame header that says mono, another rate), and feeding it the wrong layout would read
    /// past the frame's buffers.
    private var resamplerInput = (format: AV_SAMPLE_FMT_NONE, rate: Int32(0), channels: Int32(0))

    private func buildResampler(
        layout: UnsafeMutablePointer<AVChannelLayout>, sampleFormat: AVSampleFormat,
        sampleRate: Int32
    ) throws(EngineFailure) {
        if resampler != nil { swr_free(&resampler) }
        var inLayout = AVChannelLayout()
        if layout.pointee.order == AV_CHANNEL_ORDER_UNSPEC {
            av_channel_layout_default(&inLayout, layout.pointee.nb_channels)
        } else {
            av_channel_layout_copy(&inLayout, layout)
        }
        defer { av_channel_layout_uninit(&inLayout) }
        var outLayout = AVChannelLayout()
        if outputFormat.channels == Int(inLayout.nb_channels) {
            av_channel_layout_copy(&outLayout, &inLayout)
        } else {
            av_channel_layout_default(&outLayout, Int32(outputFormat.channels))
        }
        defer { av_channel_layout_uninit(&outLayout) }
        var swr: OpaquePointer?
        var rc = swr_alloc_set_opts2(
            &swr, &outLayout, outputFormat.sampleType.avSampleFormat, Int32(outputFormat.sampleRate),
            &inLayout, sampleFormat, sampleRate, 0, nil)
        if rc >= 0 { rc = swr_init(swr) }
        guard rc >= 0 else {
            swr_free(&swr)
            throw EngineFailure(
                .decodeFailed, "cannot convert \(sampleRate) Hz \(inLayout.nb_channels) ch to \(outputFormat): \(FFmpegError.describe(rc))")
        }
        resampler = swr
        resamplerInput = (sampleFormat, sampleRate, layout.pointee.nb_channels)
    }

    /// Decodes and converts the next frames into `destination` when they fit there, else into
    /// `scratch`. Packets that fail to decode are skipped, as ffmpeg does; a read error ends the
    /// stream as ffmpeg does.
    func decodeNext(into destination: Destination? = nil) throws(EngineFailure) -> Chunk {
        guard let context = formatContext, let codec = codecContext, let packet, let frame else {
            return .endOfStream
        }
        let previousGate = gate.enter()
        defer { RequestGate.leave(restoring: previousGate) }
        while !finished {
            let received = avcodec_receive_frame(codec, frame)
            if received >= 0 {
                defer { av_frame_unref(frame) }
                damagedInARow = 0
                let timestamp = frame.pointee.best_effort_timestamp
                if timestamp != tonearm_av_nopts_value() {
                    let seconds = Double(timestamp - streamStart) * av_q2d(streamTimeBase)
                    nextFramePosition = Int64((seconds * Double(outputFormat.sampleRate)).rounded())
                }
                let position = nextFramePosition
                let (count, inDestination) = try convert(frame, into: destination)
                nextFramePosition += Int64(count)
                if count > 0 { return .frames(count, position: position, inDestination: inDestination) }
                continue
            }
            if received == tonearm_averror_eof() {
                // Decoder drained: flush what the resampler still holds, then we are done.
                let (tail, inDestination) = try convert(nil, into: destination)
                finished = true
                let position = nextFramePosition
                nextFramePosition += Int64(tail)
                return tail > 0 ? .frames(tail, position: position, inDestination: inDestination) : .endOfStream
            }
            if received != tonearm_averror_eagain() {
                // A damaged packet: skipped, as ffmpeg does, unless nothing but damage comes.
                try noteDamage(received)
                continue
            }
            if draining {
                finished = true
                break
            }

            let read = av_read_frame(context, packet)
            if read < 0 {
                if cancellation.isCancelled { return .endOfStream }
                if let refusal = cancellation.refusal { throw EngineFailure(.permissionDenied, refusal) }
                if read == tonearm_averror_eagain() { continue }
                // A network source that stops before its end lost its connection (a live stream
                // has no end; FFmpeg's http says EIO when a file's body ends short).
                if isNetwork && (isLive || read != tonearm_averror_eof()) {
                    throw EngineFailure(.network, "connection lost: \(Self.describe(read, cancellation))")
                }
                draining = true
                avcodec_send_packet(codec, nil)
                continue
            }
            defer { av_packet_unref(packet) }
            if isNetwork { noteMetadataUpdate(context) }
            guard packet.pointee.stream_index == streamIndex else { continue }
            // A damaged packet is skipped; decoding goes on with the next one.
            let sent = avcodec_send_packet(codec, packet)
            if sent < 0 && sent != tonearm_averror_eagain() { try noteDamage(sent) }
        }
        return .endOfStream
    }

    /// FFmpeg copies a new ICY block into the context's metadata and raises a flag: the audio
    /// read from here on is what the new title belongs to.
    private func noteMetadataUpdate(_ context: UnsafeMutablePointer<AVFormatContext>) {
        guard context.pointee.event_flags & AVFMT_EVENT_FLAG_METADATA_UPDATED != 0 else { return }
        context.pointee.event_flags &= ~AVFMT_EVENT_FLAG_METADATA_UPDATED
        // FFmpeg adds each block's keys to the context's metadata and never removes one: a
        // station that sends ever-new keys grows it without end, and each copy into it is
        // linear in its size (a core's worth after a minute). Only StreamTitle and StreamUrl are
        // kept.
        var kept: OpaquePointer?
        for key in ["StreamTitle", "StreamUrl"] {
            if let entry = av_dict_get(context.pointee.metadata, key, nil, 0) { av_dict_set(&kept, key, entry.pointee.value, 0) }
        }
        av_dict_free(&context.pointee.metadata)
        context.pointee.metadata = kept
        guard let entry = av_dict_get(context.pointee.metadata, "StreamTitle", nil, 0) else { return }
        let title = String(cString: entry.pointee.value)
        guard title != streamTitle, !title.isEmpty else { return }
        streamTitle = title
        streamTitleTaken = false
    }

    /// Damaged packets since the last good frame, and how many make a stream that cannot go on.
    private var damagedInARow = 0
    private static let damageLimit = 500

    private func noteDamage(_ code: Int32) throws(EngineFailure) {
        damagedInARow += 1
        if damagedInARow >= Self.damageLimit {
            throw EngineFailure(.decodeFailed, "\(Self.damageLimit) damaged packets in a row, the last: \(FFmpegError.describe(code))")
        }
    }

    private func convert(
        _ frame: UnsafeMutablePointer<AVFrame>?,
        into destination: Destination?
    ) throws(EngineFailure) -> (frames: Int, inDestination: Bool) {
        if let frame {
            let format = AVSampleFormat(rawValue: frame.pointee.format)
            if format != resamplerInput.format || frame.pointee.sample_rate != resamplerInput.rate
                || frame.pointee.ch_layout.nb_channels != resamplerInput.channels
            {
                guard frame.pointee.sample_rate > 0, frame.pointee.ch_layout.nb_channels > 0 else { return (0, false) }
                try buildResampler(layout: &frame.pointee.ch_layout, sampleFormat: format, sampleRate: frame.pointee.sample_rate)
            }
        }
        guard let resampler else { throw EngineFailure(.decodeFailed, "output format not configured") }
        let inputFrames = Int(frame?.pointee.nb_samples ?? 0)
        let needed = Int(swr_get_out_samples(resampler, Int32(inputFrames)))
        // The bound is an upper one: swresample never writes more, so nothing stays behind in it.
        let direct = destination.flatMap { $0.frames >= needed ? $0 : nil }
        if direct == nil { ensureScratch(frames: needed) }
        let out = direct?.bytes ?? scratch
        let capacity = direct?.frames ?? scratchCapacityFrames
        var outPlane: UnsafeMutablePointer<UInt8>? = out.assumingMemoryBound(to: UInt8.self)
        let converted: Int32 = withUnsafeMutablePointer(to: &outPlane) { outPlanes in
            if let frame {
                let input = UnsafeMutableRawPointer(frame.pointee.extended_data!)
                    .assumingMemoryBound(to: UnsafePointer<UInt8>?.self)
                return swr_convert(resampler, outPlanes, Int32(capacity), input, frame.pointee.nb_samples)
            }
            return swr_convert(resampler, outPlanes, Int32(capacity), nil, 0)
        }
        guard converted >= 0 else {
            throw EngineFailure(.decodeFailed, "conversion failed: \(FFmpegError.describe(converted))")
        }
        return (Int(converted), direct != nil)
    }

    private func ensureScratch(frames: Int) {
        guard frames > scratchCapacityFrames else { return }
        scratch.deallocate()
        scratchCapacityFrames = frames
        scratch = UnsafeMutableRawPointer.allocate(byteCount: frames * max(outputFormat.bytesPerFrame, 8 * 8), alignment: 16)
    }

    /// Seeks to the keyframe at or before output frame `target`, less the codec's preroll
    /// (`seekPrerollFrames`); the caller discards decoded frames before `target` (using the
    /// positions `decodeNext` reports) for a sample-exact landing.
    func seek(toFrame target: Int64) throws(EngineFailure) {
        guard let context = formatContext, let codec = codecContext else { return }
        let previousGate = gate.enter()
        defer { RequestGate.leave(restoring: previousGate) }
        let seconds = Double(target) / Double(outputFormat.sampleRate)
        let from = max(0, target - Self.seekPrerollFrames(codec, outputRate: outputFormat.sampleRate))
        let timestamp = streamStart + Int64(Double(from) / Double(outputFormat.sampleRate) / av_q2d(streamTimeBase))
        // Over the network a seek is a new request: it is bounded like the first open, so a
        // server that trickles its answer's headers cannot hold it for ever.
        if isNetwork { cancellation.setDeadline(secondsFromNow: networkTimeout) }
        defer { if isNetwork { cancellation.setDeadline(secondsFromNow: nil) } }
        var rc = avformat_seek_file(context, streamIndex, Int64.min, timestamp, timestamp, 0)
        if rc < 0 && !cancellation.shouldInterrupt { rc = av_seek_frame(context, streamIndex, timestamp, AVSEEK_FLAG_BACKWARD) }
        if rc < 0 && !cancellation.shouldInterrupt { rc = av_seek_frame(context, streamIndex, timestamp, AVSEEK_FLAG_ANY) }
        guard rc >= 0 else {
            if let refusal = cancellation.refusal { throw EngineFailure(.permissionDenied, refusal) }
            if isNetwork && cancellation.shouldInterrupt && !cancellation.isCancelled {
                throw EngineFailure(.network, "seek to \(seconds) s: the server did not answer within \(networkTimeout) s")
            }
            throw EngineFailure(.decodeFailed, "seek to \(seconds) s failed: \(FFmpegError.describe(rc))")
        }
        avcodec_flush_buffers(codec)
        if let resampler {
            // Forget what the resampler buffered from before the seek.
            swr_close(resampler)
            swr_init(resampler)
        }
        draining = false
        finished = false
        nextFramePosition = from
    }
}
