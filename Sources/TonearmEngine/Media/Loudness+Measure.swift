import Foundation
import TonearmMedia

extension Loudness {
    /// Measures a file by decoding it whole (at its own rate and channels, as float: the meter
    /// filters each rate itself, and nothing is resampled that would change the peaks). Blocking:
    /// for a low-priority thread, never the real-time ones. Nil for silence.
    package static func measure(_ url: URL) throws(EngineFailure) -> Loudness? {
        try measure(url, shouldStop: { false }) ?? nil
    }

    /// As above; nil (outer) when `shouldStop` said so before the end, asked between packets.
    static func measure(_ url: URL, shouldStop: () -> Bool) throws(EngineFailure) -> Loudness?? {
        let decoder = try MediaDecoder(url: url, cancellation: CancellationFlag())
        let source = decoder.sourceFormat
        try decoder.configureOutput(PCMFormat(sampleType: .float, sampleRate: source.sampleRate, channels: source.channels))
        guard let meter = LoudnessMeter(channels: source.channels, sampleRate: source.sampleRate) else {
            throw EngineFailure(
                .decodeFailed, "\(url.path): loudness cannot be measured at \(source.sampleRate) Hz, \(source.channels) channels")
        }
        while case .frames(let count, _, _) = try decoder.decodeNext() {
            meter.add(decoder.scratch.assumingMemoryBound(to: Float.self), frames: count)
            if shouldStop() { return nil }
        }
        return .some(meter.result())
    }
}

extension Loudness {
    /// The loudness of a file's first `seconds` (or of all of it, if shorter), decoded as
    /// `measure` decodes: an item's provisional level while it is not measured whole. Tens of ms
    /// of CPU for 6 s of CD audio. Nil for silence, a file that cannot be decoded, or I/O that
    /// `cancellation` stopped.
    static func measureOpening(
        _ url: URL, seconds: Double, input: InputConfiguration,
        cancellation: CancellationFlag
    ) -> Loudness? {
        do throws(EngineFailure) {
            let decoder = try MediaDecoder(url: url, input: input, cancellation: cancellation)
            let source = decoder.sourceFormat
            try decoder.configureOutput(PCMFormat(sampleType: .float, sampleRate: source.sampleRate, channels: source.channels))
            guard let meter = LoudnessMeter(channels: source.channels, sampleRate: source.sampleRate) else { return nil }
            let wanted = Int(seconds * Double(source.sampleRate))
            var frames = 0
            while frames < wanted, !cancellation.isCancelled, case .frames(let count, _, _) = try decoder.decodeNext() {
                meter.add(decoder.scratch.assumingMemoryBound(to: Float.self), frames: count)
                frames += count
            }
            return cancellation.isCancelled ? nil : meter.result()
        } catch {
            return nil
        }
    }
}

extension LoudnessMeasurement {
    /// Measures a local file (see `Loudness.measure`): a file that cannot be decoded is
    /// `unmeasurable`. Nil when `shouldStop` said so before the end.
    package static func measure(_ url: URL, shouldStop: () -> Bool) -> LoudnessMeasurement? {
        do throws(EngineFailure) {
            guard let result = try Loudness.measure(url, shouldStop: shouldStop) else { return nil }
            return result.map { .measured($0) } ?? .silent
        } catch {
            return .unmeasurable
        }
    }
}
