import Foundation
import TonearmEngine
import TonearmMedia
import TonearmSync

/// Reads queue items' tags on one long-lived thread of its own (file I/O never runs on the event
/// loop, the cooperative pool or the audio threads) and keeps them, by URL. The thread sleeps on
/// a condition while there is nothing to read, and ends when the reader is released.
final class TagReader: Sendable {
    private let work = Work()

    init() {
        let work = self.work
        NamedThread.start("tonearm-tags") { while work.step() {} }
    }

    deinit { work.shutdown() }

    func tags(for url: URL) -> MediaTags? { work.cache.withLock { $0[url] } }

    /// Queues URLs whose tags are not known yet.
    func request(_ urls: [URL]) { work.request(urls) }

    /// Called on the reader's thread with each URL whose tags were just read.
    func onRead(_ handler: @escaping @Sendable (URL) -> Void) { work.onRead.withLock { $0 = handler } }

    /// Tags already known (the library's, for its songs): kept as if read, so the files are
    /// not opened again.
    func remember(_ known: [URL: MediaTags]) {
        guard !known.isEmpty else { return }
        work.cache.withLock { cache in
            if cache.count + known.count >= 20_000 { cache.removeAll(keepingCapacity: true) }
            cache.merge(known) { _, new in new }
        }
    }

    func shutdown() { work.shutdown() }

    /// What the reader's thread and its callers share. `@unchecked Sendable`: `pending` and
    /// `shuttingDown` are guarded by `condition`; `cache` is a `Locked`.
    private final class Work: @unchecked Sendable {
        let condition = NSCondition()
        var pending: [URL] = []
        var shuttingDown = false
        let cache = Locked<[URL: MediaTags]>([:])
        let onRead = Locked<(@Sendable (URL) -> Void)?>(nil)

        func request(_ urls: [URL]) {
            let wanted = cache.withLock { cache in urls.filter { $0.isFileURL && cache[$0] == nil } }
            guard !wanted.isEmpty else { return }
            condition.lock()
            pending.append(contentsOf: wanted)
            condition.signal()
            condition.unlock()
        }

        func shutdown() {
            condition.lock()
            shuttingDown = true
            pending = []
            condition.signal()
            condition.unlock()
        }

        /// Reads one file's tags, sleeping until there is one; false once shut down.
        func step() -> Bool {
            condition.lock()
            while pending.isEmpty && !shuttingDown { condition.wait() }
            if shuttingDown {
                condition.unlock()
                return false
            }
            let url = pending.removeFirst()
            condition.unlock()
            if cache.withLock({ $0[url] }) == nil {
                let tags = MediaTags.read(url) ?? MediaTags()
                cache.withLock { cache in
                    // Bounded memory: a daemon that saw very many files forgets what it read.
                    if cache.count >= 20_000 { cache.removeAll(keepingCapacity: true) }
                    cache[url] = tags
                }
                onRead.withLock { $0 }?(url)
            }
            return true
        }
    }
}
