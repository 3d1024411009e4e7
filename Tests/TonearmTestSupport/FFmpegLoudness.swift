import Foundation

/// What FFmpeg's `ebur128` filter says of a file (or of raw PCM): the reference our own
/// measurements and leveled output are held to.
package struct FFmpegLoudness: Sendable {
    /// Integrated loudness, LUFS.
    package let integrated: Double
    /// True peak, dBFS.
    package let truePeak: Double

    /// Measures a media file.
    package init(file path: String) throws {
        try self.init(input: [path])
    }

    /// Measures raw interleaved signed 16-bit little-endian PCM.
    package init(rawS16 path: String, sampleRate: Int, channels: Int) throws {
        try self.init(input: ["-f", "s16le", "-ar", "\(sampleRate)", "-ac", "\(channels)", path])
    }

    private init(input: [String]) throws {
        let run = try runTool(
            "/usr/bin/ffmpeg",
            ["-nostdin", "-nostats", "-hide_banner"] + input.dropLast() + [
                "-i", input.last!,
                "-af", "ebur128=peak=true", "-f", "null", "-",
            ], timeout: 60)
        // The summary's lines: "I:         -20.3 LUFS", "LRA:   0.9 LU", "Peak:   -3.1 dBFS".
        func summary(_ key: String) -> Double? {
            let lines = run.output.components(separatedBy: "Summary:").last?.split(separator: "\n") ?? []
            return lines.first { $0.trimmingCharacters(in: .whitespaces).hasPrefix(key + ":") }
                .flatMap { $0.split(separator: " ").dropFirst().first.flatMap { Double($0) } }
        }
        guard run.status == 0, let integrated = summary("I"), let peak = summary("Peak") else {
            throw FFmpegFailure(description: "ffmpeg's ebur128 gave no summary: \(run.output)")
        }
        self.integrated = integrated
        truePeak = peak
    }

    package struct FFmpegFailure: Error, CustomStringConvertible {
        package let description: String
    }
}
