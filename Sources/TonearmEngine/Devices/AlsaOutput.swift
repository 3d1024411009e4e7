import CALSA
import TonearmMedia

/// Owns one open ALSA PCM. Not Sendable: it is opened on the opener thread (`DeviceOpenAttempt`)
/// and handed, once, to the output thread under the engine lock; only one thread uses it at a time.
final class AlsaOutput: OutputDevice {
    let device: String
    let format: PCMFormat
    let canPause: Bool
    let periodFrames: Int
    let bufferFrames: Int
    /// What ALSA complained of while the open still succeeded (a `file:` device that could not
    /// create its file): the likely cause of a later failure.
    let openingComplaint: String?
    private var pcm: OpaquePointer?

    private init(
        device: String, pcm: OpaquePointer, format: PCMFormat, canPause: Bool,
        periodFrames: Int, bufferFrames: Int, openingComplaint: String?
    ) {
        self.device = device
        self.pcm = pcm
        self.format = format
        self.canPause = canPause
        self.periodFrames = periodFrames
        self.bufferFrames = bufferFrames
        self.openingComplaint = openingComplaint
    }

    deinit { close() }

    /// `code` in words, with what ALSA itself said on this thread since the call began, if
    /// anything: a plugin's -EIO is only explained there (a `file:` device's unwritable path).
    static func describe(_ code: Int32, orElse complaint: String? = nil) -> String {
        let words = String(cString: snd_strerror(code))
        // The complaint at the open names the cause; what ALSA says now is often its consequence.
        let saidNow = AlsaMessages.take()
        guard let said = complaint ?? saidNow, !said.isEmpty else { return words }
        return "\(words) (\(said))"
    }

    /// A failure of this open device, explained by what ALSA said now or at the open.
    private func describe(_ code: Int32) -> String { Self.describe(code, orElse: openingComplaint) }

    /// Opens `device` as close to `requested` as it allows. The sample type falls back to the
    /// others (the decoder converts to whatever was granted); rate and channels take the nearest.
    static func open(device: String, requested: PCMFormat, bufferMilliseconds: Int) throws(EngineFailure) -> AlsaOutput {
        tonearm_alsa_silence_errors()
        AlsaMessages.clear()
        var handle: OpaquePointer?
        let openResult = snd_pcm_open(&handle, device, SND_PCM_STREAM_PLAYBACK, 0)
        guard openResult >= 0, let pcm = handle else {
            throw EngineFailure(
                .deviceUnavailable,
                "cannot open audio device '\(device)': \(describe(openResult))")
        }
        func fail(_ what: String, _ code: Int32) -> EngineFailure {
            snd_pcm_close(pcm)
            return EngineFailure(.deviceUnavailable, "audio device '\(device)': \(what): \(describe(code))")
        }

        var paramsPointer: OpaquePointer?
        guard snd_pcm_hw_params_malloc(&paramsPointer) >= 0, let params = paramsPointer else {
            throw fail("out of memory", -12)
        }
        defer { snd_pcm_hw_params_free(params) }

        var rc = snd_pcm_hw_params_any(pcm, params)
        guard rc >= 0 else { throw fail("no configurations", rc) }
        rc = snd_pcm_hw_params_set_access(pcm, params, SND_PCM_ACCESS_RW_INTERLEAVED)
        guard rc >= 0 else { throw fail("interleaved access not supported", rc) }

        let candidates = [requested.sampleType] + SampleType.allCases.reversed().filter { $0 != requested.sampleType }
        guard let sampleType = candidates.first(where: { snd_pcm_hw_params_test_format(pcm, params, $0.alsaFormat) == 0 }) else {
            throw fail("no supported sample format", -22)
        }
        rc = snd_pcm_hw_params_set_format(pcm, params, sampleType.alsaFormat)
        guard rc >= 0 else { throw fail("set format \(sampleType)", rc) }

        var channels = UInt32(requested.channels)
        rc = snd_pcm_hw_params_set_channels_near(pcm, params, &channels)
        guard rc >= 0 else { throw fail("set channels \(requested.channels)", rc) }
        var rate = UInt32(requested.sampleRate)
        rc = snd_pcm_hw_params_set_rate_near(pcm, params, &rate, nil)
        guard rc >= 0 else { throw fail("set rate \(requested.sampleRate)", rc) }

        var bufferTime = UInt32(max(bufferMilliseconds, 10) * 1000)
        rc = snd_pcm_hw_params_set_buffer_time_near(pcm, params, &bufferTime, nil)
        guard rc >= 0 else { throw fail("set buffer time", rc) }
        var periodTime = bufferTime / 4
        rc = snd_pcm_hw_params_set_period_time_near(pcm, params, &periodTime, nil)
        guard rc >= 0 else { throw fail("set period time", rc) }
        rc = snd_pcm_hw_params(pcm, params)
        guard rc >= 0 else { throw fail("apply hardware parameters", rc) }

        var period: snd_pcm_uframes_t = 0
        var buffer: snd_pcm_uframes_t = 0
        snd_pcm_hw_params_get_period_size(params, &period, nil)
        snd_pcm_hw_params_get_buffer_size(params, &buffer)
        let canPause = snd_pcm_hw_params_can_pause(params) != 0

        // Start as soon as one period is queued, so the first sound comes without waiting for a full buffer.
        var swPointer: OpaquePointer?
        if snd_pcm_sw_params_malloc(&swPointer) >= 0, let sw = swPointer {
            defer { snd_pcm_sw_params_free(sw) }
            if snd_pcm_sw_params_current(pcm, sw) >= 0 {
                snd_pcm_sw_params_set_start_threshold(pcm, sw, max(period, 1))
                snd_pcm_sw_params_set_avail_min(pcm, sw, max(period, 1))
                snd_pcm_sw_params(pcm, sw)
            }
        }

        let granted = PCMFormat(sampleType: sampleType, sampleRate: Int(rate), channels: Int(channels))
        return AlsaOutput(
            device: device, pcm: pcm, format: granted, canPause: canPause,
            periodFrames: max(Int(period), 64), bufferFrames: Int(buffer),
            openingComplaint: AlsaMessages.take() ?? FileDeviceCheck.problem(device: device))
    }

    /// Blocking write of up to `frames` interleaved frames. Recovers from xruns and suspend.
    func write(_ data: UnsafeRawPointer, frames: Int) -> OutputWriteOutcome {
        guard let pcm else { return .lost("device closed") }
        let result = snd_pcm_writei(pcm, data, snd_pcm_uframes_t(frames))
        if result >= 0 { return .wrote(Int(result)) }
        let code = Int32(result)
        if code == -tonearm_errno_eagain() || code == -tonearm_errno_eintr() { return .wrote(0) }
        if code == -tonearm_errno_ebadfd() {
            // After drop/drain the PCM sits in SETUP; recover() cannot leave it, prepare() does.
            return snd_pcm_prepare(pcm) >= 0 ? .recovered : .lost(describe(code))
        }
        if code == -tonearm_errno_enodev() { return .lost(describe(code)) }
        if snd_pcm_recover(pcm, code, 1) >= 0 { return .recovered }
        return .lost(describe(code))
    }

    /// Frames written but not yet heard.
    func delayFrames() -> Int {
        guard let pcm else { return 0 }
        var delay: snd_pcm_sframes_t = 0
        return snd_pcm_delay(pcm, &delay) >= 0 ? max(Int(delay), 0) : 0
    }

    /// Stops the sound now. Returns true when the device paused in place (resume continues the
    /// queued frames); false when it dropped them (the caller keeps the position and refills).
    func pauseNow() -> Bool {
        guard let pcm else { return false }
        if canPause, snd_pcm_state(pcm) == SND_PCM_STATE_RUNNING, snd_pcm_pause(pcm, 1) >= 0 { return true }
        snd_pcm_drop(pcm)
        snd_pcm_prepare(pcm)
        return false
    }

    func resume() {
        guard let pcm else { return }
        if snd_pcm_state(pcm) == SND_PCM_STATE_PAUSED, snd_pcm_pause(pcm, 0) >= 0 { return }
        snd_pcm_prepare(pcm)
    }

    /// ALSA's rewind: what the device holds beyond what it is playing now (less a safety margin
    /// near the hardware pointer, `snd_pcm_rewindable`) can be taken back. All or nothing.
    func rewind(frames: Int) -> Int {
        guard let pcm, frames > 0 else { return 0 }
        let rewindable = snd_pcm_rewindable(pcm)
        guard rewindable >= frames else { return 0 }
        let rewound = snd_pcm_rewind(pcm, snd_pcm_uframes_t(frames))
        if rewound == frames { return frames }
        // Less than asked (the hardware moved on meanwhile): undone, all or nothing. The frames are
        // still in the buffer; forwarding over them puts them back.
        if rewound > 0 { snd_pcm_forward(pcm, snd_pcm_uframes_t(rewound)) }
        return 0
    }

    var canRewind: Bool { true }

    /// Discards what the device holds and makes it ready for new frames.
    func discard() {
        guard let pcm else { return }
        snd_pcm_drop(pcm)
        snd_pcm_prepare(pcm)
    }

    /// Plays out what the device holds, then makes it ready for the next stream.
    func drain() {
        guard let pcm else { return }
        snd_pcm_drain(pcm)
        snd_pcm_prepare(pcm)
    }

    func close() {
        guard let pcm else { return }
        snd_pcm_drop(pcm)
        snd_pcm_close(pcm)
        self.pcm = nil
    }
}
