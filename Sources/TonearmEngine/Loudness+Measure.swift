import Foundation
import TonearmMedia

extension Loudness {
    /// Measures a file by decoding it whole (at its own rate and channels, as float: the meter
    /// filters each rate itself, and nothing is resampled that would change the peaks). Blocking:
    /// for a low-priority thread, never the real-time ones. Nil for silence.
    public static func measure(_ url: URL) throws(EngineFailure) -> Loudness? {
        let decoder = try MediaDecoder(url: url, cancellation: CancellationFlag())
        let source = decoder.sourceFormat
        try decoder.configureOutput(PCMFormat(sampleType: .float, sampleRate: source.sampleRate, channels: source.channels))
        guard let meter = LoudnessMeter(channels: source.channels, sampleRate: source.sampleRate) else {
            throw EngineFailure(.decodeFailed, "\(url.path): loudness cannot be measured at \(source.sampleRate) Hz, \(source.channels) channels")
        }
        while case .frames(let count, _, _) = try decoder.decodeNext() {
            meter.add(decoder.scratch.assumingMemoryBound(to: Float.self), frames: count)
        }
        return meter.result()
    }
}
