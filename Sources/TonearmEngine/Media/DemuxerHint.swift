import CFFmpeg
import Foundation

/// The demuxer a local file is opened with before FFmpeg probes, chosen by its name and
/// confirmed by its first bytes.
///
/// Without a format, `avformat_open_input` runs the probe of every demuxer FFmpeg has (and
/// libopenmpt's), which pages in about 2 MiB of code a player never needs again. A file whose
/// name and first bytes agree is opened with its own demuxer at once; any other file (no
/// extension, a misnamed file, a header the check does not know) is probed as before. The
/// bytes are checked so that a name alone never decides: a FLAC file named `.mp3` is probed.
enum DemuxerHint {
    /// The demuxer for `path` (a local file) if its name and its first bytes agree, else nil.
    static func format(forFileNamed name: String, readingFrom path: String) -> UnsafePointer<AVInputFormat>? {
        guard let dot = name.utf8.lastIndex(of: UInt8(ascii: ".")),
            let candidate = candidates[String(name[name.index(after: dot)...]).lowercased()]
        else { return nil }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        func read(at offset: Int) -> [UInt8]? {
            var head = [UInt8](repeating: 0, count: 16)
            let count = head.withUnsafeMutableBytes { pread(fd, $0.baseAddress, 16, off_t(offset)) }
            return count == 16 ? head : nil
        }
        guard var head = read(at: 0) else { return nil }
        // An ID3v2 tag may stand in front (FLAC, MP3); FFmpeg skips it before any demuxer
        // reads, so what counts is what follows it. Its size is 4 bytes of 7 bits.
        if bytes(head, at: 0, are: "ID3") {
            let size = head[6...9].reduce(0) { $0 << 7 | Int($1 & 0x7F) }
            let footer = head[5] & 0x10 != 0 ? 10 : 0
            guard let after = read(at: 10 + size + footer) else { return nil }
            head = after
        }
        guard candidate.matches(head) else { return nil }
        return demuxers[candidate.demuxer] ?? nil
    }

    /// Each candidate's demuxer, looked up once: the lookup compares names with every demuxer's.
    /// `nonisolated(unsafe)`: written once, when first read; FFmpeg's demuxers are immutable.
    nonisolated(unsafe) private static let demuxers: [String: UnsafePointer<AVInputFormat>?] = Dictionary(
        uniqueKeysWithValues: Set(candidates.values.map(\.demuxer)).map { ($0, av_find_input_format($0)) })

    private struct Candidate: Sendable {
        let demuxer: String
        let matches: @Sendable ([UInt8]) -> Bool
    }

    private static func bytes(_ head: [UInt8], at offset: Int, are ascii: String) -> Bool {
        Array(head[offset..<offset + ascii.utf8.count]) == Array(ascii.utf8)
    }

    private static let flac = Candidate(demuxer: "flac") { bytes($0, at: 0, are: "fLaC") }
    /// An MPEG audio frame header: 11 sync bits, a version that exists, a layer that exists.
    private static let mp3 = Candidate(demuxer: "mp3") {
        $0[0] == 0xFF && $0[1] & 0xE0 == 0xE0 && $0[1] & 0x18 != 0x08 && $0[1] & 0x06 != 0
    }
    private static let ogg = Candidate(demuxer: "ogg") { bytes($0, at: 0, are: "OggS") }
    private static let wav = Candidate(demuxer: "wav") { bytes($0, at: 0, are: "RIFF") && bytes($0, at: 8, are: "WAVE") }
    private static let aiff = Candidate(demuxer: "aiff") {
        bytes($0, at: 0, are: "FORM") && (bytes($0, at: 8, are: "AIFF") || bytes($0, at: 8, are: "AIFC"))
    }
    /// ISO base media (MP4, M4A): a file starts with its `ftyp` box.
    private static let mp4 = Candidate(demuxer: "mov") { bytes($0, at: 4, are: "ftyp") }
    /// Matroska and WebM: the EBML magic.
    private static let matroska = Candidate(demuxer: "matroska") { Array($0[0..<4]) == [0x1A, 0x45, 0xDF, 0xA3] }
    private static let wavpack = Candidate(demuxer: "wv") { bytes($0, at: 0, are: "wvpk") }

    private static let candidates: [String: Candidate] = [
        "flac": flac, "mp3": mp3, "ogg": ogg, "oga": ogg, "opus": ogg, "wav": wav, "aif": aiff, "aiff": aiff,
        "aifc": aiff, "m4a": mp4, "m4b": mp4, "mp4": mp4, "mka": matroska, "mkv": matroska, "webm": matroska,
        "wv": wavpack,
    ]
}
