/// How full the pipe is kept: the decoder fills it to `fillTarget` and sleeps; the output wakes
/// it when it is half empty. Both threads read these, lock held.
extension EngineControl {
    /// How far the decoder runs ahead of what is heard at least: enough to open the next item well
    /// before the current one ends (gapless), little enough that a file changing on disk is noticed
    /// soon. It refills at half (see `pipeIsHalfEmpty`), so it decodes in bursts of half this,
    /// each started cold after a sleep: longer bursts cost less per second of audio, and 4 s
    /// brings paced decoding close to the cost of decoding unpaced (docs/performance.md).
    static let decodeAheadSeconds = 4.0

    /// The pipe level the decoder fills to: `decodeAheadSeconds` for a file; for a network
    /// source its prebuffer (at least 1 s): more than that waits in the socket. Lock held.
    var fillTarget: Double { decoder.network ? max(prebufferSeconds, 1) : decodeAheadSeconds }

    /// Lock held.
    var pipeIsFull: Bool { pipe.freeCount == 0 || pipe.bufferedSeconds >= fillTarget }
    var pipeIsHalfEmpty: Bool { pipe.freeCount >= pipe.capacity / 2 && pipe.bufferedSeconds <= fillTarget / 2 }
}
