import TonearmMedia

/// A live stream's automatic gain (`replay_gain.live = "agc"`), on the decoder thread: a
/// short-term meter fed with every frame the decoder produces anyway (never a second decode,
/// never on the output thread), and the gain it leads to, which the decoder stamps on each chunk
/// it fills. Decoder thread only; created and fed off the engine lock.
struct LiveLeveler {
    let itemID: Int
    let format: PCMFormat
    let target: Double
    private let meter: LoudnessMeter
    private(set) var gain = LiveGain()

    init?(itemID: Int, format: PCMFormat, target: Double) {
        guard let meter = LoudnessMeter(channels: format.channels, sampleRate: format.sampleRate, mode: .shortTerm) else {
            return nil
        }
        self.itemID = itemID
        self.format = format
        self.target = target
        self.meter = meter
    }

    /// Adds `frames` decoded frames (in `format`) and moves the gain on by their duration.
    mutating func add(_ samples: UnsafeRawPointer, frames: Int) {
        guard frames > 0 else { return }
        meter.add(samples, type: format.sampleType, frames: frames)
        gain.update(shortTermLUFS: meter.shortTerm(), target: target, seconds: Double(frames) / Double(format.sampleRate))
    }
}
