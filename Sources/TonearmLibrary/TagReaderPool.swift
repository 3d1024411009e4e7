import CLinux
import Foundation
import TonearmMedia
import TonearmSync

/// Reads files' tags for a scan on `library.scan_threads` threads of its own
/// (`tonearm-scan-N`), each at idle CPU and I/O priority: opening a file and reading its header
/// waits on the disk more than it computes, so several reads at once finish a large first scan
/// sooner. With one thread, the scan thread reads them itself.
final class TagReaderPool: Sendable {
    private let reader: @Sendable (URL) -> MediaTags?
    private let threads: [JobThread]

    init(threads count: Int, reader: @escaping @Sendable (URL) -> MediaTags?) {
        self.reader = reader
        threads = count > 1 ? (0..<count).map { JobThread(name: "tonearm-scan-\($0 + 1)") } : []
    }

    deinit { finish() }

    func finish() { for thread in threads { thread.finish() } }

    /// The tags of each file (nil: not media), in the order given. Blocks until all are read.
    func read(_ urls: [URL]) -> [MediaTags?] {
        guard threads.count > 1, urls.count > 1 else { return urls.map(reader) }
        let results = Locked([MediaTags?](repeating: nil, count: urls.count))
        let done = DispatchGroup()
        for (index, thread) in threads.enumerated() where index < urls.count {
            done.enter()
            thread.async { [reader] in
                // Each read waits for playback and for everyone else's disk reads.
                _ = tonearm_idle_priority_current_thread()
                // Every count-th file from this thread's index: the threads share the work evenly.
                for position in stride(from: index, to: urls.count, by: self.threads.count) {
                    let tags = reader(urls[position])
                    results.withLock { $0[position] = tags }
                }
                done.leave()
            }
        }
        done.wait()
        return results.withLock { $0 }
    }
}
