import CFFmpeg
import Foundation
import TonearmMedia

/// FFmpeg presents a picture embedded in a file as an extra stream marked "attached picture",
/// whose one packet is the image file as stored; it is read when the file is opened, so no
/// stream is decoded for it.
extension EmbeddedPicture {
    /// The first picture a local file carries; nil when it has none or cannot be opened as
    /// media. Blocks on file I/O: call it from a thread of its own.
    package static func read(_ url: URL) -> EmbeddedPicture? {
        guard url.isFileURL, let decoder = try? MediaDecoder(url: url, cancellation: CancellationFlag()),
            let context = decoder.formatContext
        else { return nil }
        for index in 0..<Int(context.pointee.nb_streams) {
            guard let stream = context.pointee.streams[index],
                stream.pointee.disposition & AV_DISPOSITION_ATTACHED_PIC != 0
            else { continue }
            let packet = stream.pointee.attached_pic
            guard let data = packet.data, packet.size > 0 else { continue }
            let codec = stream.pointee.codecpar.pointee.codec_id
            return EmbeddedPicture(
                bytes: Array(UnsafeBufferPointer(start: data, count: Int(packet.size))),
                mimeType: mimeType(codec))
        }
        return nil
    }

    private static func mimeType(_ codec: AVCodecID) -> String? {
        switch codec {
        case AV_CODEC_ID_MJPEG: "image/jpeg"
        case AV_CODEC_ID_PNG: "image/png"
        case AV_CODEC_ID_GIF: "image/gif"
        case AV_CODEC_ID_BMP: "image/bmp"
        case AV_CODEC_ID_WEBP: "image/webp"
        case AV_CODEC_ID_TIFF: "image/tiff"
        default: nil
        }
    }
}
