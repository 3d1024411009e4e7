import CFFmpeg
import Foundation
import TonearmMedia

extension MediaDecoder {
    /// Opens the container at `openPath` (`path` itself, the file, `/proc/self/fd/N` for one opened inside the
    /// roots, or the URL over `connection`): with its own demuxer when the name and header agree
    /// (`DemuxerHint`), else probed. Returns the context and the request budget installed on it,
    /// which must outlive it. On failure the connection is closed and the error says why.
    static func openContainer(
        path: String, openPath: String, input: InputConfiguration, isNetwork: Bool, isFile: Bool, interrupt: AVIOInterruptCB,
        connection: inout UnsafeMutablePointer<AVIOContext>?, cancellation: CancellationFlag
    ) throws(EngineFailure) -> (UnsafeMutablePointer<AVFormatContext>, RequestBudget?) {
        var context: UnsafeMutablePointer<AVFormatContext>?
        var budget: RequestBudget?
        func openInput(_ format: UnsafePointer<AVInputFormat>?) -> Int32 {
            context = avformat_alloc_context()
            budget = context.map { RequestBudget(installedOn: $0, verifyAgainst: input.tlsVerify ? input.caFile : nil) }
            context?.pointee.interrupt_callback = interrupt
            context?.pointee.pb = connection
            var options: OpaquePointer?
            // Bound probing so a huge file of garbage cannot hold the decoder thread for long; a
            // stream arrives in real time, so it is probed on less.
            av_dict_set(&options, "probesize", isNetwork ? "262144" : "5000000", 0)
            av_dict_set(&options, "analyzeduration", isNetwork ? "1000000" : "5000000", 0)
            av_dict_set(&options, "protocol_whitelist", isNetwork ? input.networkWhitelist : input.ffmpegWhitelist, 0)
            defer { av_dict_free(&options) }
            return avformat_open_input(&context, openPath, format, &options)
        }
        let name = path.utf8.lastIndex(of: UInt8(ascii: "/")).map { String(path[path.index(after: $0)...]) } ?? path
        let hint = isFile ? DemuxerHint.format(forFileNamed: name, readingFrom: openPath) : nil
        var openResult = openInput(hint)
        // A file its own demuxer refuses is probed as any other: the probe has the last word.
        if openResult < 0 && hint != nil { openResult = openInput(nil) }
        guard openResult >= 0, let context else {
            // A context FFmpeg freed on failure leaves the connection to us.
            avio_closep(&connection)
            if let refusal = cancellation.refusal { throw EngineFailure(.permissionDenied, "\(path): \(refusal)") }
            if let budget, budget.refused > 0 { throw EngineFailure(.unsupportedFormat, "\(path): \(budget.description)") }
            if isNetwork && !isContentError(openResult) && openResult != tonearm_averror(EINVAL) {
                throw EngineFailure(.network, "\(path): the connection failed while probing: \(describe(openResult, cancellation))")
            }
            if isFile && openResult == tonearm_averror(tonearm_errno_enoent()) {
                // The file was there a moment ago (checked first): a demuxer that answers ENOENT
                // (AIFF with a frame count of 0xFFFFFFFE) means the content, not a missing file.
                throw EngineFailure(.unsupportedFormat, "not a media file FFmpeg can read: \(path) (its header is damaged)")
            }
            throw openFailure(openResult, path: path, isNetwork: false, cancellation: cancellation)
        }
        return (context, budget)
    }

    /// What a player is told of an opened item: its length (the audio stream's own extent),
    /// codec, container, bits, bit rate, tags and ReplayGain.
    static func describe(
        _ context: UnsafeMutablePointer<AVFormatContext>, stream: UnsafeMutablePointer<AVStream>, streamStart: Int64,
        decoder: UnsafePointer<AVCodec>, bits rawBits: Int, dataStart: Int64, headerSuffices: Bool
    ) -> Info {
        var duration: Double?
        if context.pointee.duration > 0 {
            // The audio stream's own extent (positions count from its first sample), not the
            // container's: another stream may start long before it. FFmpeg's duration runs from
            // the container's first timestamp, except Matroska's, which runs from 0.
            let containerDuration = Double(context.pointee.duration) / Double(AV_TIME_BASE)
            let containerStart =
                context.pointee.start_time == tonearm_av_nopts_value()
                ? 0 : Double(context.pointee.start_time) / Double(AV_TIME_BASE)
            let isMatroska = String(cString: context.pointee.iformat.pointee.name).hasPrefix("matroska")
            let end = isMatroska ? containerDuration : containerStart + containerDuration
            duration = max(0, end - Double(streamStart) * av_q2d(stream.pointee.time_base))
        } else if stream.pointee.duration > 0 {
            duration = Double(stream.pointee.duration) * av_q2d(stream.pointee.time_base)
        }
        if let held = rawPCMSeconds(
            stream.pointee.codecpar, container: context.pointee.iformat, dataStart: dataStart,
            size: context.pointee.pb.map { avio_size($0) } ?? -1),
            headerContradicts(duration, held: held, container: context.pointee.iformat)
        {
            duration = held
        }
        func tag(_ key: String) -> String? {
            for dictionary in [context.pointee.metadata, stream.pointee.metadata] {
                if let entry = av_dict_get(dictionary, key, nil, 0) {
                    return String(cString: entry.pointee.value)
                }
            }
            return nil
        }
        func entries(_ dictionary: OpaquePointer?) -> [(key: String, value: String)] {
            var all: [(key: String, value: String)] = []
            var entry: UnsafeMutablePointer<AVDictionaryEntry>?
            while let next = av_dict_get(dictionary, "", entry, AV_DICT_IGNORE_SUFFIX) {
                all.append((String(cString: next.pointee.key), String(cString: next.pointee.value)))
                entry = next
            }
            return all
        }
        let tags = MediaTags.collect(
            [entries(context.pointee.metadata), entries(stream.pointee.metadata)],
            fromID3: String(cString: context.pointee.iformat.pointee.name) == "mp3")
        // The audio stream's own rate when the container says, else the whole file's.
        var bitRate = stream.pointee.codecpar.pointee.bit_rate > 0 ? stream.pointee.codecpar.pointee.bit_rate : context.pointee.bit_rate
        if bitRate <= 0, headerSuffices, let duration, duration > 0, let size = context.pointee.pb.map({ avio_size($0) }), size > 0 {
            // What the analysis would have said: the file's size over its duration.
            bitRate = Int64(Double(size) * 8 / duration)
        }
        return (
            duration, String(cString: decoder.pointee.name), String(cString: context.pointee.iformat.pointee.name),
            rawBits > 0 ? rawBits : nil, bitRate > 0 ? Int(bitRate) : nil, tags, ReplayGainInfo.read(tag)
        )
    }
}
