import CFFmpeg
import Foundation
import TonearmMedia

/// A picture fetched over the network: a cast's cover, named by its control point
/// (DIDL-Lite's `albumArtURI`). It goes through the connection code of every network source
/// (`MediaDecoder.connect`: `input.protocols`, TLS, redirects, each request checked by a
/// `RequestGate`), with one deadline for the whole fetch and a cap on its size. Only bytes
/// that are an image of a known kind come back, typed by the bytes themselves: what a server
/// says its content is never reaches a browser. Blocking: run on a thread of its own.
package enum RemotePicture {
    /// Larger than any cover a control point would name.
    package static let maximumBytes = 8 << 20

    package struct Failure: Error, Sendable, CustomStringConvertible {
        package let description: String
    }

    package static func fetch(_ url: URL, input: InputConfiguration, seconds: Double = 10) throws(Failure) -> EmbeddedPicture {
        guard InputConfiguration.isNetwork(url), input.allows(url) else {
            throw Failure(description: "\(url.absoluteString): not an address of an allowed network protocol (input.protocols)")
        }
        FFmpegLog.install
        MediaDecoder.networkInit
        let cancellation = CancellationFlag()
        let gate = RequestGate(input: input, cancellation: cancellation)
        let previousGate = gate.enter()
        defer { RequestGate.leave(restoring: previousGate) }
        cancellation.capDeadlines(secondsFromNow: seconds)
        let interrupt = AVIOInterruptCB(
            callback: { opaque in
                guard let opaque else { return 0 }
                return Unmanaged<CancellationFlag>.fromOpaque(opaque).takeUnretainedValue().shouldInterrupt ? 1 : 0
            }, opaque: Unmanaged.passUnretained(cancellation).toOpaque())
        let path = url.absoluteString
        var connection: UnsafeMutablePointer<AVIOContext>?
        do throws(EngineFailure) {
            connection = try MediaDecoder.connect(path, input: input, interrupt: interrupt, gate: gate, cancellation: cancellation)
        } catch {
            throw Failure(description: error.message)
        }
        defer { avio_closep(&connection) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = buffer.withUnsafeMutableBufferPointer { avio_read(connection, $0.baseAddress, Int32($0.count)) }
            if count == tonearm_averror_eof() || count == 0 { break }
            guard count > 0 else {
                if let refusal = cancellation.refusal { throw Failure(description: "\(path): \(refusal)") }
                throw Failure(description: "\(path): \(MediaDecoder.describe(count, cancellation))")
            }
            bytes += buffer[0..<Int(count)]
            guard bytes.count <= maximumBytes else { throw Failure(description: "\(path): over \(maximumBytes) bytes, not a cover") }
        }
        guard let type = imageType(bytes) else { throw Failure(description: "\(path): not a JPEG, PNG, GIF or WebP image") }
        return EmbeddedPicture(bytes: bytes, mimeType: type)
    }

    /// The kind of image `bytes` are, by their signature; nil for anything else.
    package static func imageType(_ bytes: [UInt8]) -> String? {
        func starts(_ prefix: [UInt8], at offset: Int = 0) -> Bool {
            bytes.count >= offset + prefix.count && Array(bytes[offset..<offset + prefix.count]) == prefix
        }
        if starts([0xFF, 0xD8, 0xFF]) { return "image/jpeg" }
        if starts([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return "image/png" }
        if starts(Array("GIF87a".utf8)) || starts(Array("GIF89a".utf8)) { return "image/gif" }
        if starts(Array("RIFF".utf8)), starts(Array("WEBP".utf8), at: 8) { return "image/webp" }
        return nil
    }
}
