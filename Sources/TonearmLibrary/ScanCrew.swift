import CLinux
import Foundation
import TonearmMedia
import TonearmSync

/// The threads a scan works on: `library.scan_threads` threads of its own (`tonearm-scan-N`),
/// each at idle CPU and I/O priority, and the scan thread beside them. Reading a directory, a
/// file's status and a file's header waits on the disk more than it computes: several reads in
/// flight keep a disk busy, and on a cold cache finish a scan sooner than one reader could.
final class ScanCrew: Sendable {
    /// Reads one file's tags, by path (nil: not media).
    let reader: @Sendable (String) -> MediaTags?
    private let threads: [JobThread]

    init(threads count: Int, reader: @escaping @Sendable (String) -> MediaTags?) {
        self.reader = reader
        threads = count > 1 ? (0..<count).map { JobThread(name: "tonearm-scan-\($0 + 1)") } : []
    }

    deinit { finish() }

    func finish() { for thread in threads { thread.finish() } }

    /// Runs `work` on each of the crew's threads and on the calling thread at once, and returns
    /// when every one of them has returned.
    func everyone(_ work: @escaping @Sendable () -> Void) {
        let done = DispatchGroup()
        for thread in threads {
            done.enter()
            thread.async {
                // Each read waits for playback and for everyone else's disk reads.
                _ = tonearm_idle_priority_current_thread()
                work()
                done.leave()
            }
        }
        work()
        done.wait()
    }
}
