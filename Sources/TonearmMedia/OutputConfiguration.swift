/// Where the output thread sends the sound (`output.kind`).
package enum OutputSink: Sendable, Equatable {
    /// An ALSA PCM, `device`.
    case alsa
    /// A Snapcast server's TCP stream source (`source = tcp://…?mode=server` in snapserver.conf),
    /// in the one format that source expects.
    case snapcast(host: String, port: Int, format: PCMFormat)
}

/// How the engine opens and drives the output device (the config's `[output]` table).
package struct OutputConfiguration: Sendable, Equatable {
    /// ALSA PCM name: "default", "hw:0,0", "null", "file:'/tmp/x.raw',raw"; for a Snapcast sink,
    /// its name in messages ("snapcast:127.0.0.1:4953").
    package var device: String
    package var sink: OutputSink = .alsa
    /// nil follows the source.
    package var sampleRate: Int?
    package var channels: Int?
    package var sampleType: SampleType?
    /// ALSA buffer time.
    package var bufferMilliseconds: Int
    /// Keep real time ourselves, for devices that never block (null, file).
    package var pace: Bool
    /// Pacing speed factor (tests play faster than real time but still paced).
    package var speed: Double
    /// While the device is gone (unplugged, powered off), how often to try opening it again.
    package var reopenIntervalMilliseconds: Int
    /// How long a device open may take before the load fails with `deviceUnavailable` (the open
    /// is abandoned on the opener thread, never waited for).
    package var openTimeoutMilliseconds: Int
    /// A device missing or busy when an item is loaded: the item is ready and waits, interrupted,
    /// and plays when the device appears (true); or the load fails with `deviceUnavailable` (false).
    package var waitForDevice: Bool
    /// Whether playback interrupted by a lost device resumes by itself once the device is back.
    package var resumeAfterInterruption: Bool
    /// How long the device stays open once nothing plays (the queue ended, stopped, paused):
    /// then it is closed, so the DAC and what it feeds may sleep, and the next play opens it
    /// again. 0 releases at once; nil keeps it open for good.
    package var releaseAfterSeconds: Double?
    /// Commands run before the device is opened after a release (or first) and after it is
    /// released (`output.on_open`, `output.on_close`): argv arrays, no shell. Empty: none.
    package var onOpen: [String] = []
    package var onClose: [String] = []
    /// How long a hook may run before it is killed.
    package var hookTimeoutMilliseconds: Int = 5000
    /// A pause fades out over 5 ms before the device stops (it takes effect once that is heard,
    /// what the device holds later) and play fades back in over 5 ms, so neither clicks. false:
    /// the device stops at once and resumes at full level, sample for sample.
    package var fadesOnPause = true

    package init(
        device: String = "default", sampleRate: Int? = nil, channels: Int? = nil,
        sampleType: SampleType? = nil, bufferMilliseconds: Int = 200, pace: Bool = false,
        speed: Double = 1.0, reopenIntervalMilliseconds: Int = 2000, openTimeoutMilliseconds: Int = 5000,
        resumeAfterInterruption: Bool = true, waitForDevice: Bool = true, releaseAfterSeconds: Double? = 10
    ) {
        self.waitForDevice = waitForDevice
        self.releaseAfterSeconds = releaseAfterSeconds
        self.device = device
        self.sampleRate = sampleRate
        self.channels = channels
        self.sampleType = sampleType
        self.bufferMilliseconds = bufferMilliseconds
        self.pace = pace
        self.speed = speed
        self.reopenIntervalMilliseconds = reopenIntervalMilliseconds
        self.openTimeoutMilliseconds = openTimeoutMilliseconds
        self.resumeAfterInterruption = resumeAfterInterruption
    }

    /// The format to ask the device for, given what the source decodes to.
    package func requestedFormat(forSource source: PCMFormat) -> PCMFormat {
        if case .snapcast(_, _, let format) = sink { return format }
        return PCMFormat(
            sampleType: sampleType ?? source.sampleType,
            sampleRate: sampleRate ?? source.sampleRate,
            channels: channels ?? source.channels)
    }
}
