/// Interleaved sample types the output path uses; the decoder converts everything to one of these.
package enum SampleType: String, Sendable, Equatable, CaseIterable {
    case s16, s32, float

    package var bytesPerSample: Int {
        switch self {
        case .s16: 2
        case .s32, .float: 4
        }
    }
}

/// The PCM format of one stream of interleaved frames.
package struct PCMFormat: Sendable, Hashable, CustomStringConvertible {
    package var sampleType: SampleType
    package var sampleRate: Int
    package var channels: Int

    package init(sampleType: SampleType, sampleRate: Int, channels: Int) {
        self.sampleType = sampleType
        self.sampleRate = sampleRate
        self.channels = channels
    }

    package var bytesPerFrame: Int { sampleType.bytesPerSample * channels }

    /// MPD's audio format text, "rate:bits:channels": the source's bits per sample when the
    /// codec says them, else the sample type's ("f" for float).
    package func mpdText(sourceBits: Int?) -> String {
        let bits: String
        if let sourceBits {
            bits = String(sourceBits)
        } else {
            switch sampleType {
            case .float: bits = "f"
            case .s16: bits = "16"
            case .s32: bits = "32"
            }
        }
        return "\(sampleRate):\(bits):\(channels)"
    }
    package var description: String { "\(sampleType.rawValue) \(sampleRate) Hz \(channels) ch" }
}
