import Foundation
import TonearmEngine
import TonearmMedia
import TonearmSync

/// Reads queue items' tags on one long-lived thread of its own (file I/O never runs on the event
/// loop, the cooperative pool or the audio threads) and keeps them, by URL. The thread sleeps on
/// a condition while there is nothing to read, and ends when the reader is released.
final class TagReader: Sendable {
    private let work = Work()
    /// Durations the state file kept, by URL: a file's until its tags are read again.
    private let kept = Locked<[URL: Double]>([:])

    init() {
        let work = self.work
        NamedThread.start("tonearm-tags") { while work.step() {} }
    }

    deinit { work.shutdown() }

    func tags(for url: URL) -> MediaTags? { work.cache.withLock { $0[url] } }

    /// A file's duration: as read; until it is read, as the state file kept it.
    func duration(for url: URL) -> Double? {
        if let read = tags(for: url) { return read.duration }
        return kept.withLock { $0[url] }
    }

    /// `duration(for:)` of each of `urls`, in order, with one look at each store.
    func durations(for urls: [URL]) -> [Double?] {
        let kept = self.kept.withLock { $0 }
        return work.cache.withLock { cache in
            urls.map { url -> Double? in
                if let read = cache[url] { return read.duration }
                return kept[url]
            }
        }
    }

    /// Durations known before a restart (the state file's), shown until the files are read.
    func keep(durations: [URL: Double]) {
        guard !durations.isEmpty else { return }
        kept.withLock { $0.merge(durations) { _, new in new } }
    }

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
