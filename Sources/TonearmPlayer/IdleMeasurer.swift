import Foundation
import Synchronization
import TonearmEngine
import TonearmMedia
import TonearmSync

/// Decodes and meters one file at a time on a thread of its own at idle CPU and I/O priority
/// (`tonearm-measure`), for the loudness keeper's thread, which waits for it. It shares no lock
/// with any other thread: an idle-priority thread holding a lock that a normal one wants would
/// make that one wait for as long as the CPUs are busy (priority inversion). The file goes in and
/// the result comes out through two semaphores, and a stop is an atomic flag.
///
/// `@unchecked Sendable`: `job` is written by the caller before `jobs.signal()` and read by the
/// measuring thread after its `jobs.wait()`; `result` is written by the measuring thread before
/// `done.signal()` and read by the caller after its `done.wait()`. `measure` and `finish` are
/// called from one thread (the keeper's), one at a time.
final class IdleMeasurer: @unchecked Sendable {
    private let jobs = DispatchSemaphore(value: 0)
    private let done = DispatchSemaphore(value: 0)
    private var job: URL?
    private var result: LoudnessMeasurement?
    /// Set by anyone to stop the measurement in progress; the caller clears it before each
    /// (under its own lock, so that a stop asked after it decided to measure is not lost).
    let stop = Atomic<Bool>(false)

    init() {
        NamedThread.start("tonearm-measure") { [self] in
            NamedThread.lowerToIdlePriority()
            while true {
                jobs.wait()
                guard let url = job else { return }
                result = LoudnessMeasurement.measure(url) { stop.load(ordering: .relaxed) }
                done.signal()
            }
        }
    }

    /// Measures `url` and waits for it; nil when `stop` was set before the end.
    func measure(_ url: URL) -> LoudnessMeasurement? {
        job = url
        jobs.signal()
        done.wait()
        return result
    }

    /// Ends the measuring thread.
    func finish() {
        job = nil
        jobs.signal()
    }
}
