import CFFmpeg
import Foundation
import Synchronization
import TonearmMedia

/// What opening a source takes besides the decoder itself: the checks before a file is opened,
/// the network connection, and the words for what went wrong.
extension MediaDecoder {
    /// How long the samples of a raw PCM file (WAV, AIFF, AU, …) last, from the bytes after its
    /// header: what decodes, whatever the header says. nil for any other codec, or when the
    /// file's size or where its samples start is not known.
    static func rawPCMSeconds(
        _ parameters: UnsafeMutablePointer<AVCodecParameters>,
        container: UnsafePointer<AVInputFormat>, dataStart: Int64, size: Int64
    ) -> Double? {
        let bits = av_get_bits_per_sample(parameters.pointee.codec_id)
        let blockAlign = Int64(parameters.pointee.block_align)
        let rate = Int64(parameters.pointee.sample_rate)
        guard bits > 0, blockAlign > 0, rate > 0, dataStart > 0, size > dataStart else { return nil }
        return Double((size - dataStart) / blockAlign) / Double(rate)
    }

    /// Whether a raw PCM file's header says a length its samples contradict: longer than the
    /// file holds (cut short), or, in AIFF, whose frame count FFmpeg reports but does not
    /// stop at (it reads the sound chunk to its end), far shorter.
    static func headerContradicts(_ stated: Double?, held: Double, container: UnsafePointer<AVInputFormat>) -> Bool {
        guard let stated else { return false }
        if stated > held + 0.001 { return true }
        return String(cString: container.pointee.name) == "aiff" && stated < held - 0.001
    }

    /// FFmpeg's network layer (TLS libraries) is set up once, before the first network open.
    static let networkInit: Void = { avformat_network_init() }()

    /// Opens a network source's connection. FFmpeg's http follows the redirects; the thread's
    /// `RequestGate` stops each request to an address the item may not open before it is sent.
    static func connect(
        _ path: String, input: InputConfiguration, interrupt: AVIOInterruptCB,
        gate: RequestGate, cancellation: CancellationFlag
    ) throws(EngineFailure) -> UnsafeMutablePointer<AVIOContext> {
        var options: OpaquePointer?
        let micros = String(Int64(input.timeoutSeconds * 1_000_000))
        av_dict_set(&options, "protocol_whitelist", input.networkWhitelist, 0)
        // Handed down by http to the tls protocol under it, for the first connection and every
        // reconnection and redirect.
        av_dict_set(&options, "tls_verify", input.tlsVerify ? "1" : "0", 0)
        if input.tlsVerify { av_dict_set(&options, "ca_file", input.caFile, 0) }
        av_dict_set(&options, "rw_timeout", micros, 0)
        av_dict_set(&options, "timeout", micros, 0)
        av_dict_set(&options, "icy", "1", 0)
        av_dict_set(&options, "user_agent", "Tonearm", 0)
        var connection: UnsafeMutablePointer<AVIOContext>?
        var callback = interrupt
        FFmpegLog.beginWatchingTLS()
        let result = avio_open2(&connection, path, AVIO_FLAG_READ, &callback, &options)
        let tlsComplaint = FFmpegLog.endWatchingTLS()
        av_dict_free(&options)
        guard result >= 0, let opened = connection else {
            if let refusal = cancellation.refusal { throw EngineFailure(.permissionDenied, "\(path): \(refusal)") }
            if let tlsComplaint {
                let host = URL(string: path)?.host ?? path
                throw EngineFailure(
                    .tls,
                    "\(path): the certificate of \(host) could not be verified (\(tlsComplaint)); input.ca_file names the authorities trusted"
                )
            }
            throw openFailure(result, path: path, isNetwork: true, cancellation: cancellation)
        }
        guard gate.requestsChecked > 0 else {
            avio_closep(&connection)
            throw EngineFailure(
                .permissionDenied, "\(path): this FFmpeg did not announce its request, so where redirects lead cannot be checked")
        }
        return opened
    }

    /// Why an open failed, in the words a user needs: what the server said, or what the network did.
    static func openFailure(_ code: Int32, path: String, isNetwork: Bool, cancellation: CancellationFlag) -> EngineFailure {
        if !isNetwork {
            if code == tonearm_averror(tonearm_errno_enoent()) { return EngineFailure(.fileNotFound, "no such file: \(path)") }
            if code == tonearm_averror(tonearm_errno_eacces()) { return EngineFailure(.permissionDenied, "permission denied: \(path)") }
            if code == tonearm_averror(EMFILE) || code == tonearm_averror(ENFILE) {
                // Out of file descriptors: the file is fine, and a retry once some are free plays it.
                return EngineFailure(.ioError, "cannot open \(path): \(FFmpegError.describe(code))")
            }
            return EngineFailure(.unsupportedFormat, "not a media file FFmpeg can read: \(path) (\(FFmpegError.describe(code)))")
        }
        switch code {
        case tonearm_averror_http_not_found():
            return EngineFailure(.fileNotFound, "\(path): the server answered 404 Not Found")
        case tonearm_averror_http_unauthorized(), tonearm_averror_http_forbidden():
            return EngineFailure(.permissionDenied, "\(path): the server refused access (\(FFmpegError.describe(code)))")
        case tonearm_averror_http_bad_request(), tonearm_averror_http_other_4xx():
            return EngineFailure(.unsupportedFormat, "\(path): the server refused the request (\(FFmpegError.describe(code)))")
        case tonearm_averror(EINVAL):
            // FFmpeg's http takes any redirect as http to the host it names, and opens nothing
            // the whitelist leaves out: a redirect to a file, or to https where only http is
            // allowed, ends here, as does a URL it cannot parse.
            return EngineFailure(
                .permissionDenied,
                "\(path): the server redirects where it may not be followed (only to allowed protocols on a host), or the URL is malformed")
        case _ where isContentError(code):
            return EngineFailure(.unsupportedFormat, "\(path): not a media stream FFmpeg can read (\(FFmpegError.describe(code)))")
        default:
            return EngineFailure(.network, "\(path): \(describe(code, cancellation))")
        }
    }

    /// An error about the bytes themselves (an HTML page, garbage), not the connection.
    static func isContentError(_ code: Int32) -> Bool {
        code == tonearm_averror_invaliddata() || code == tonearm_averror_stream_not_found()
            || code == tonearm_averror_decoder_not_found()
    }

    /// FFmpeg's words for an error; an interrupted wait is named as the timeout it was.
    static func describe(_ code: Int32, _ cancellation: CancellationFlag) -> String {
        if code == tonearm_averror_exit() && !cancellation.isCancelled { return "timed out" }
        if code == tonearm_averror_eof() { return "the server closed the connection" }
        return FFmpegError.describe(code)
    }

    /// Opens a local file for reading and refuses it unless the file opened (its path as the
    /// kernel names the descriptor) lies inside one of `roots` (called only when there are roots).
    static func openInsideRoots(_ path: String, roots: [String]) throws(EngineFailure) -> Int32 {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        guard fd >= 0 else {
            let code = errno
            switch code {
            case ENOENT, ENOTDIR: throw EngineFailure(.fileNotFound, "no such file: \(path)")
            case EACCES: throw EngineFailure(.permissionDenied, "permission denied: \(path)")
            default: throw EngineFailure(.ioError, "cannot open \(path): \(String(cString: strerror(code)))")
            }
        }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            close(fd)
            throw EngineFailure(.unsupportedFormat, "is not a regular file: \(path)")
        }
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/self/fd/\(fd)", &buffer, buffer.count - 1)
        let opened = length > 0 ? String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self) : ""
        guard roots.contains(where: { opened == $0 || opened.hasPrefix($0 == "/" ? "/" : $0 + "/") }) else {
            close(fd)
            throw EngineFailure(.permissionDenied, "\(path) is outside input.roots (it is \(opened.isEmpty ? "unknown" : opened))")
        }
        return fd
    }

    /// Only regular files are opened: opening a FIFO blocks until a writer comes (no timeout or
    /// cancellation reaches into open(2)), and a device such as /dev/zero never ends.
    static func checkRegularReadableFile(_ path: String) throws(EngineFailure) {
        var info = stat()
        guard stat(path, &info) == 0 else {
            let code = errno
            switch code {
            case ENOENT, ENOTDIR: throw EngineFailure(.fileNotFound, "no such file: \(path)")
            case EACCES: throw EngineFailure(.permissionDenied, "permission denied: \(path)")
            case ENAMETOOLONG: throw EngineFailure(.invalidPath, "file name too long: \(path.prefix(80))…")
            default: throw EngineFailure(.ioError, "cannot open \(path): \(String(cString: strerror(code)))")
            }
        }
        switch info.st_mode & S_IFMT {
        case S_IFREG: break
        case S_IFDIR: throw EngineFailure(.unsupportedFormat, "is a directory, not a media file: \(path)")
        case S_IFIFO: throw EngineFailure(.unsupportedFormat, "is a FIFO, not a regular file: \(path)")
        default: throw EngineFailure(.unsupportedFormat, "is a device or socket, not a regular file: \(path)")
        }
        guard access(path, R_OK) == 0 else { throw EngineFailure(.permissionDenied, "permission denied: \(path)") }
    }
}

extension MediaDecoder {
    /// Whether the header alone says all a player needs: one FLAC stream whose STREAMINFO
    /// (kept as the stream's extradata) gave its length. The stream's rate and channel count
    /// are then taken from the same STREAMINFO, as the analysis would have; the decoder takes
    /// its sample format and channel layout from it when it opens.
    static func headerSaysAll(_ context: UnsafeMutablePointer<AVFormatContext>) -> Bool {
        guard String(cString: context.pointee.iformat.pointee.name) == "flac", context.pointee.nb_streams == 1,
            let stream = context.pointee.streams[0], let parameters = stream.pointee.codecpar,
            parameters.pointee.codec_id == AV_CODEC_ID_FLAC, parameters.pointee.extradata_size >= 34,
            let info = parameters.pointee.extradata, stream.pointee.duration > 0, stream.pointee.time_base.den > 0
        else { return false }
        // STREAMINFO: 10 bytes of block and frame sizes, then 20 bits of sample rate and 3 of
        // channels minus one, 5 of bits per sample minus one.
        let rate = Int32(info[10]) << 12 | Int32(info[11]) << 4 | Int32(info[12]) >> 4
        let channels = Int32(info[12] >> 1 & 0x7) + 1
        guard rate > 0 else { return false }
        parameters.pointee.sample_rate = rate
        parameters.pointee.bits_per_raw_sample = (Int32(info[12] & 1) << 4 | Int32(info[13] >> 4)) + 1
        // The order is left unknown: the decoder sets FLAC's own layout for the count.
        av_channel_layout_uninit(&parameters.pointee.ch_layout)
        parameters.pointee.ch_layout.order = AV_CHANNEL_ORDER_UNSPEC
        parameters.pointee.ch_layout.nb_channels = channels
        return true
    }
}
