import Foundation
import TonearmRigs

extension Runner {
    // 10. Snapcast: the 60 s FLAC (44.1 kHz) played at 1× into a real snapserver's TCP source
    // (snapserver and one snapclient started by the benchmark on loopback, as in the tests),
    // against the same file played paced to ALSA's null device in the same format: what the
    // Snapcast output costs beside ALSA's. The same into a 48 kHz source is reported beside it:
    // there the decoder also resamples, which a null device following the source never does.
    // Only tonearmd's own CPU is counted.
    func snapcast() throws {
        for tool in ["/usr/bin/snapserver", "/usr/bin/snapclient"] where !FileManager.default.isExecutableFile(atPath: tool) {
            throw BenchError("\(tool) is missing: run scripts/setup-debian.sh --tests")
        }
        let path = file(60, "flac")
        let (null, sameFormat) = try snapcastCPU(path, format: "44100:16:2")
        report.add("flac 1x into snapserver 44.1 kHz: CPU", "% of a core", sameFormat.map { $0 * 100 })
        report.add("the same to null, paced: CPU", "% of a core", null.map { $0 * 100 })
        report.add("snapcast / null paced CPU", "ratio", zip(sameFormat, null).map { $0 / $1 }, budget: .atMost(1.3))
        let (null48, resampled) = try snapcastCPU(path, format: "48000:16:2")
        report.add("flac 1x into snapserver 48 kHz (resampled): CPU", "% of a core", resampled.map { $0 * 100 })
        report.add("snapcast 48 kHz / null paced (44.1) CPU", "ratio", zip(resampled, null48).map { $0 / $1 })
    }

    /// CPU shares of tonearmd playing `path` to null (paced) and into a snapserver source in
    /// `format`, alternately, in pairs.
    private func snapcastCPU(_ path: String, format: String) throws -> (null: [Double], snapcast: [Double]) {
        let rig = try SnapcastRig(format: format)
        defer {
            rig.stop()
            rig.directory.remove()
        }
        try rig.startClient("room.raw")
        let config = rig.directory.path("tonearmd.toml")
        try """
        [output]
        kind = "snapcast"
        [snapcast]
        source = "127.0.0.1:\(rig.sourcePort)"
        format = "\(format)"

        """.write(toFile: config, atomically: true, encoding: .utf8)
        var null: [Double] = []
        var snapcast: [Double] = []
        for _ in 0..<Swift.max(repeats / 2, 2) {
            null.append(try playingCPU(path))
            snapcast.append(try playingCPU(path, ["--config", config]))
        }
        return (null, snapcast)
    }
}
