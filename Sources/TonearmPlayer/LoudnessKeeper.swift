import Foundation
import Logging
import TonearmEngine
import TonearmMedia
import TonearmSync

/// Measures files' loudness (EBU R128) before they are heard, decoding each file itself (never
/// through the real-time pipe): queue items first, in the order asked (the item about to play
/// before the rest; the player asks only under a mode that levels by loudness, and only for
/// the current and next items), then the library's songs not yet measured. What it finds is
/// kept in memory by URL and in the store (the library's database) by file identity, so
/// nothing is measured twice. Its own thread (`tonearm-loudness`) keeps the books at normal priority, so a lock it
/// shares with the player is never held by a thread that may not run; the decoding and metering
/// run at idle priority on `tonearm-measure` (`IdleMeasurer`). Both sleep while there is nothing
/// to measure, and end at `shutdown`.
final class LoudnessKeeper: Sendable {
    private let work = Work()

    init() {
        let work = self.work
        NamedThread.start("tonearm-loudness") {
            while work.step() {}
            work.measurer.finish()
        }
    }

    deinit { work.shutdown() }

    /// Where measurements are kept, whether the library's songs are measured too, and who is
    /// told of each result (on the keeper's thread).
    func configure(
        store: (any LoudnessStore)?, measuresLibrary: Bool, logger: Logger?,
        measured: @escaping @Sendable (URL, LoudnessMeasurement) -> Void
    ) {
        work.configure(Work.Settings(store: store, measuresLibrary: measuresLibrary, logger: logger, measured: measured))
    }

    /// What is known of a file's loudness; nil: not measured yet (or not a local file).
    func known(_ url: URL) -> LoudnessMeasurement? { work.cache.withLock { $0[url] } }

    /// Queues local files whose loudness is not known yet; `first`: before everything queued.
    func request(_ urls: [URL], first: Bool = false) { work.request(urls, first: first) }

    /// A file the decoder measures on the way: not measured here meanwhile (no second decode),
    /// until `record` or `resume`.
    func deferMeasuring(_ url: URL) { work.deferMeasuring(url) }

    /// What the decoder measured on the way: kept (stored, cached, told) as if measured here.
    func record(_ measurement: LoudnessMeasurement, for url: URL) { work.record(measurement, for: url) }

    /// The decoder gave its measurement up: the file is measured here after all.
    func resume(_ url: URL) { work.resume(url) }

    /// The library's songs changed (a scan ended): those not measured yet are measured next,
    /// after the queue's items.
    func libraryChanged() { work.libraryChanged() }

    func shutdown() { work.shutdown() }

    /// What the keeper's thread and its callers share. `@unchecked Sendable`: every `var` is
    /// guarded by `condition`; `cache` is a `Locked`.
    private final class Work: @unchecked Sendable {
        struct Settings {
            var store: (any LoudnessStore)?
            var measuresLibrary = false
            var logger: Logger?
            var measured: (@Sendable (URL, LoudnessMeasurement) -> Void)?
        }

        let condition = NSCondition()
        let measurer = IdleMeasurer()
        var settings = Settings()
        /// The file being measured now, and whether a queue item may interrupt it (a library
        /// song): who changes what is wanted stops it through `measurer.stop`.
        var measuring: (url: URL, interruptible: Bool)?
        /// Queue items to measure: `urgent` first, then `pending` from `pendingHead` on.
        var urgent: [URL] = []
        var pending: [URL] = []
        var pendingHead = 0
        /// The library's songs to measure: wanted since its last change, read in batches by
        /// song id from `libraryCursor`.
        var libraryWanted = false
        var libraryCursor = 0
        var libraryBatch: [FileIdentity] = []
        /// Files the decoder measures on the way, and what it measured, still to keep.
        var deferred: Set<URL> = []
        var recorded: [(URL, LoudnessMeasurement)] = []
        var shuttingDown = false
        let cache = Locked<[URL: LoudnessMeasurement]>([:])

        var hasQueueWork: Bool { !recorded.isEmpty || !urgent.isEmpty || pendingHead < pending.count }

        func configure(_ settings: Settings) {
            condition.lock()
            self.settings = settings
            if settings.measuresLibrary && settings.store != nil { libraryWanted = true }
            condition.signal()
            condition.unlock()
        }

        func request(_ urls: [URL], first: Bool) {
            var wanted = cache.withLock { cache in urls.filter { $0.isFileURL && cache[$0] == nil } }
            guard !wanted.isEmpty else { return }
            condition.lock()
            if !deferred.isEmpty { wanted.removeAll { deferred.contains($0) } }
            if first {
                urgent.removeAll { wanted.contains($0) }
                urgent.insert(contentsOf: wanted, at: 0)
            } else {
                pending.append(contentsOf: wanted)
            }
            if measuring?.interruptible == true { measurer.stop.store(true, ordering: .relaxed) }
            condition.signal()
            condition.unlock()
        }

        func deferMeasuring(_ url: URL) {
            condition.lock()
            deferred.insert(url)
            // The decoder measures it from here: a measurement of it here stops.
            if measuring?.url == url { measurer.stop.store(true, ordering: .relaxed) }
            urgent.removeAll { $0 == url }
            if pendingHead < pending.count, pending[pendingHead...].contains(url) {
                pending = pending[pendingHead...].filter { $0 != url }
                pendingHead = 0
            }
            condition.unlock()
        }

        func record(_ measurement: LoudnessMeasurement, for url: URL) {
            condition.lock()
            deferred.remove(url)
            recorded.append((url, measurement))
            if measuring?.interruptible == true { measurer.stop.store(true, ordering: .relaxed) }
            condition.signal()
            condition.unlock()
        }

        func resume(_ url: URL) {
            condition.lock()
            let wasDeferred = deferred.remove(url) != nil
            condition.unlock()
            if wasDeferred { request([url], first: false) }
        }

        func libraryChanged() {
            condition.lock()
            if settings.measuresLibrary && settings.store != nil {
                libraryWanted = true
                libraryCursor = 0
                libraryBatch = []
                condition.signal()
            }
            condition.unlock()
        }

        func shutdown() {
            condition.lock()
            shuttingDown = true
            measurer.stop.store(true, ordering: .relaxed)
            recorded = []
            deferred = []
            urgent = []
            pending = []
            pendingHead = 0
            condition.signal()
            condition.unlock()
        }

        /// Does one thing, sleeping until there is one: looks up or measures a queue item, or
        /// reads the library's next batch, or measures one of its songs. False once shut down.
        func step() -> Bool {
            condition.lock()
            while !hasQueueWork && !libraryWanted && !shuttingDown { condition.wait() }
            if shuttingDown {
                condition.unlock()
                return false
            }
            let settings = self.settings
            if !recorded.isEmpty {
                let (url, measurement) = recorded.removeFirst()
                condition.unlock()
                if let file = Self.identity(url.path) { keep(measurement, of: url, file, settings) }
                return true
            }
            if let url = takeQueueItem() {
                condition.unlock()
                if cache.withLock({ $0[url] }) == nil, let file = Self.identity(url.path) {
                    measure(url, file, settings, interruptible: false)
                }
                return true
            }
            if libraryBatch.isEmpty {
                let cursor = libraryCursor
                condition.unlock()
                let next = readLibrary(after: cursor, settings)
                condition.lock()
                // A change meanwhile started the library over: this batch is not the one wanted.
                if libraryCursor == cursor {
                    if let next, next.cursor != cursor {
                        libraryCursor = next.cursor
                        libraryBatch = next.files
                    } else {
                        libraryWanted = false
                    }
                }
                condition.unlock()
                return true
            }
            let song = libraryBatch.removeFirst()
            condition.unlock()
            let url = URL(fileURLWithPath: song.path, isDirectory: false)
            if let file = Self.identity(song.path), !measure(url, file, settings, interruptible: true) {
                // A queue item came first: this song waits for the next turn.
                condition.lock()
                libraryBatch.insert(song, at: 0)
                condition.unlock()
            }
            return true
        }

        private func takeQueueItem() -> URL? {
            if !urgent.isEmpty { return urgent.removeFirst() }
            guard pendingHead < pending.count else { return nil }
            let url = pending[pendingHead]
            pendingHead += 1
            if pendingHead == pending.count {
                pending.removeAll(keepingCapacity: pending.count <= 1024)
                pendingHead = 0
            } else if pendingHead >= 4096 && pendingHead * 2 >= pending.count {
                pending.removeFirst(pendingHead)
                pendingHead = 0
            }
            return url
        }

        private func readLibrary(after cursor: Int, _ settings: Settings) -> (files: [FileIdentity], cursor: Int)? {
            do {
                return try settings.store?.unmeasured(after: cursor, limit: 256)
            } catch {
                settings.logger?.error(
                    "cannot read which songs' loudness is still to measure",
                    metadata: ["error": "\(error)"])
                return nil
            }
        }

        /// Takes a file's measurement from the store, or measures it and stores what it found.
        /// False when it stopped for a queue item (`interruptible`), for the decoder (the file
        /// is deferred to it) or the shutdown.
        @discardableResult
        private func measure(_ url: URL, _ file: FileIdentity, _ settings: Settings, interruptible: Bool) -> Bool {
            do {
                if let stored = try settings.store?.measurements(of: [file])[file] {
                    remember(url, stored, settings)
                    return true
                }
            } catch {
                settings.logger?.warning("cannot read a stored loudness", metadata: ["file": "\(file.path)", "error": "\(error)"])
            }
            let started = DispatchTime.now().uptimeNanoseconds
            // Stopped (see `measuring`) for a queue item, for the decoder that took the file over
            // (it started playing) or for the shutdown.
            condition.lock()
            let stopped = shuttingDown || (interruptible && hasQueueWork) || deferred.contains(url)
            if !stopped {
                measurer.stop.store(false, ordering: .relaxed)
                measuring = (url, interruptible)
            }
            condition.unlock()
            guard !stopped else { return false }
            let result = measurer.measure(url)
            condition.lock()
            measuring = nil
            condition.unlock()
            guard let result else { return false }
            settings.logger?.debug(
                "measured loudness",
                metadata: [
                    "file": "\(file.path)", "result": "\(Self.describe(result))",
                    "ms": "\((DispatchTime.now().uptimeNanoseconds - started) / 1_000_000)",
                ])
            keep(result, of: url, file, settings)
            return true
        }

        /// Stores a measurement, caches it and tells of it.
        private func keep(_ measurement: LoudnessMeasurement, of url: URL, _ file: FileIdentity, _ settings: Settings) {
            do {
                try settings.store?.store([(file, measurement)])
            } catch {
                settings.logger?.warning("cannot keep a measured loudness", metadata: ["file": "\(file.path)", "error": "\(error)"])
            }
            remember(url, measurement, settings)
        }

        private func remember(_ url: URL, _ measurement: LoudnessMeasurement, _ settings: Settings) {
            cache.withLock { cache in
                // Bounded memory: a daemon that saw very many files forgets what it measured
                // (the store still has it).
                if cache.count >= 20_000 { cache.removeAll(keepingCapacity: true) }
                cache[url] = measurement
            }
            settings.measured?(url, measurement)
        }

        static func identity(_ path: String) -> FileIdentity? {
            var info = stat()
            guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
            return FileIdentity(path: path, size: Int(info.st_size), mtime: Int(info.st_mtim.tv_sec))
        }

        static func describe(_ measurement: LoudnessMeasurement) -> String {
            switch measurement {
            case .measured(let loudness):
                String(format: "%.1f LUFS, %.1f dBTP", loudness.integrated, loudness.truePeak)
            case .silent: "silent"
            case .unmeasurable: "cannot be decoded"
            }
        }
    }
}
