import Foundation
import TonearmRigs

extension Runner {
    /// Crossfading (#29): the daemon's CPU while two FLAC items overlap by 15 s (the second
    /// decoded and mixed with the first's kept-back tail on the decoder thread), beside its CPU
    /// while the first plays alone, in the same run, paced at 4× on the `null` device. Windows
    /// are placed by the audio's clock (position = wall time × speed since the play's answer).
    func crossfade() throws {
        let speed = 4.0
        var alone: [Double] = []
        var overlapping: [Double] = []
        var ratios: [Double] = []
        for _ in 0..<Swift.max(repeats / 2, 1) {
            let running = try RunningDaemon(daemon, ["--device", "null", "--pace", "--speed", "\(speed)"])
            defer { _ = running.stop() }
            let control = try running.client()
            _ = try control.call("options", ["crossfade": 15])
            _ = try control.call("add", ["urls": [file(60, "flac"), file(60, "flac")], "play": true])
            let started = monotonic()
            func window(from: Double, to: Double) -> Double {
                sleep(seconds: Swift.max(0, started + from / speed - monotonic()))
                let (before, start) = (running.sample, monotonic())
                sleep(seconds: Swift.max(0, started + to / speed - monotonic()))
                let (after, end) = (running.sample, monotonic())
                return (after.cpuNanoseconds - before.cpuNanoseconds) / 1e9 / (end - start) * 100
            }
            // The first item alone (its tail is kept back from 44 s on), then the overlap (45–60 s).
            let single = window(from: 8, to: 40)
            let mixed = window(from: 45, to: 60)
            alone.append(single)
            overlapping.append(mixed)
            ratios.append(mixed / single)
        }
        report.add("crossfade 4x: CPU, one item alone", "% of a core", alone)
        report.add("crossfade 4x: CPU, two items overlapping", "% of a core", overlapping)
        report.add("crossfade: CPU overlapping / alone", "×", ratios, budget: .atMost(2))
    }
}
