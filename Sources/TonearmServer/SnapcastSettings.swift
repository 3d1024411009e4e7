import TonearmMedia

/// Where the output thread sends the sound (`output.kind`).
package enum OutputKind: String, Sendable, Equatable {
    case alsa
    case snapcast
}

/// The Snapcast server's TCP stream source (`[snapcast]`): where it listens, and the one format
/// it was configured with (`sampleformat`), which the decoder converts every item to.
package struct SnapcastSettings: Sendable, Equatable {
    /// HOST:PORT of snapserver's `source = tcp://HOST:PORT?name=…&mode=server`.
    package var source = "127.0.0.1:4953"
    /// RATE:BITS:CHANNELS, as snapserver writes it.
    package var format = "48000:16:2"

    package init() {}

    static func hostAndPort(_ text: String) -> (host: String, port: Int)? {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
            (1...65535).contains(port)
        else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return host.isEmpty ? nil : (host, port)
    }

    static func format(_ text: String) -> PCMFormat? {
        let parts = text.split(separator: ":").map { Int($0) }
        guard parts.count == 3, let rate = parts[0], let bits = parts[1], let channels = parts[2],
            (8000...384_000).contains(rate), (1...8).contains(channels)
        else { return nil }
        let type: SampleType
        switch bits {
        case 16: type = .s16
        case 32: type = .s32
        default: return nil
        }
        return PCMFormat(sampleType: type, sampleRate: rate, channels: channels)
    }
}

extension DaemonConfiguration {
    /// The engine's output as configured: for Snapcast, the server as the sink, named so in
    /// messages, with pacing on (Tonearm keeps real time for the server, whose buffer would
    /// otherwise run over).
    package var engineOutput: OutputConfiguration {
        var output = self.output
        if outputKind == .snapcast, let (host, port) = SnapcastSettings.hostAndPort(snapcast.source),
            let format = SnapcastSettings.format(snapcast.format)
        {
            output.sink = .snapcast(host: host, port: port, format: format)
            output.device = "snapcast:\(snapcast.source)"
            output.pace = true
        }
        return output
    }
}
