import Foundation
import TonearmMedia

/// Tags are read by opening the file as the decoder does (one code path for probing), then
/// closing it.
extension MediaTags {
    /// Reads a local file's tags; nil when it cannot be opened as media. Blocks on file I/O:
    /// call it from a thread of its own, never the event loop or the cooperative pool.
    package static func read(_ url: URL) -> MediaTags? {
        guard url.isFileURL, let decoder = try? MediaDecoder(url: url, cancellation: CancellationFlag()) else {
            return nil
        }
        let info = decoder.info
        var tags = MediaTags(entries: info.tags, duration: info.duration, replayGain: info.replayGain)
        tags.audioFormat = decoder.sourceFormat.mpdText(sourceBits: info.bits)
        var file = stat()
        if stat(url.path, &file) == 0 { tags.modified = Int(file.st_mtim.tv_sec) }
        return tags
    }
}
