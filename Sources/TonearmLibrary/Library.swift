import CLinux
import Foundation
import Logging
import TonearmMedia
import TonearmSync

/// The music library: the database of what the music directory holds, kept by scans. Scans run
/// one at a time on the `tonearm-scan` thread, at idle CPU and I/O priority, in the order asked;
/// reads run on the caller's thread and never wait for a scan. Blocking: call from a worker thread, never an event loop.
package final class Library: Sendable {
    package let configuration: LibraryConfiguration
    package let root: String
    let database: LibraryDatabase
    private let scanner: LibraryScanner
    private let scans = JobThread(name: "tonearm-scan")
    private let logger: Logger
    private let state = Locked(ScanState())
    /// Held while a scan is numbered and queued (`enqueueUpdate`), never while one runs.
    private let enqueueing = Locked(())
    private let news = StreamFanout<LibraryNews>(bufferingPolicy: .bufferingNewest(64))
    private let watcher = Locked<LibraryWatcher?>(nil)

    private struct ScanState {
        var nextJob = 0
        /// The job running now, if any.
        var running: Int?
        var queued = 0
        /// What is offline, by path relative to the music directory ("": all of it), with why.
        var offline: [String: String] = [:]
        /// `update` jobs asked for and not started yet, in order (a job leaves when it starts).
        var waiting: [WaitingScan] = []
    }

    /// A scan asked for by `update`, not started yet.
    private struct WaitingScan: Sendable {
        let job: Int
        let path: String
        let rescan: Bool

        /// Whether this scan does what a request for `other` asks: the same path or one below
        /// it, and files read again if that is asked.
        func covers(_ other: String, rescan wanted: Bool) -> Bool {
            (rescan || !wanted) && (path.isEmpty || other == path || other.hasPrefix(path + "/"))
        }
    }

    /// Most `update` scans waiting at once beside the one running (MPD's update queue).
    package static let updateQueueLimit = 32

    /// What a scan tells: a job started or ended, and whether the database changed.
    package enum LibraryNews: Sendable, Equatable {
        case updateStarted(job: Int)
        case updateFinished(job: Int, ScanOutcome)
        case offline(job: Int, reason: String)
    }

    /// Opens the library whose music directory is `configuration.musicDirectory` (required) and
    /// whose database is `databasePath`. `reader` reads a file's tags by path (nil: not media).
    package init(
        configuration: LibraryConfiguration, databasePath: String, logger: Logger,
        reader: @escaping @Sendable (String) -> MediaTags?
    ) throws {
        guard let root = configuration.musicDirectory else {
            throw LibraryOffline(description: "no music directory configured")
        }
        self.configuration = configuration
        self.root = root
        self.logger = logger
        database = try LibraryDatabase(path: databasePath, logger: logger)
        scanner = LibraryScanner(
            root: root, database: database,
            crew: ScanCrew(threads: configuration.scanThreads, reader: reader),
            followSymlinks: configuration.followSymlinks, logger: logger)
        // Before any scan (the same thread runs them in order): until it is loaded, `list` and
        // `count` are asked of SQL.
        scans.async { [database, logger] in
            do {
                try database.tagIndex.load(from: database)
            } catch {
                logger.warning("the library's tags could not be read into memory", metadata: ["error": "\(error)"])
            }
        }
    }

    deinit {
        // The last reference may go on the watch thread itself (its callbacks hold the library
        // for a moment): the watcher is told to stop, not waited for.
        watcher.withLock { $0?.stop(waiting: false) }
        scans.async { [scanner] in scanner.crew.finish() }
        scans.finish()
    }

    /// Stops watching, waits for the scans asked so far, then stops the scan thread.
    package func shutdown() {
        let current = watcher.withLock { watcher in
            defer { watcher = nil }
            return watcher
        }
        current?.stop()
        // The tag readers end after the scans queued before them.
        scans.async { [scanner] in scanner.crew.finish() }
        scans.finish()
    }

    /// Starts seeing changes to the music directory as they happen (`library.watch`); each is
    /// in the database within a couple of seconds.
    package func startWatching() {
        let watcher = LibraryWatcher(
            root: root, followSymlinks: configuration.followSymlinks, rescanInterval: configuration.rescanIntervalSeconds,
            logger: logger, refresh: { [weak self] directories, trees in self?.refresh(directories, trees: trees) },
            rescanAll: { [weak self] in _ = try? self?.enqueueUpdate("", rescan: false, limited: false) })
        self.watcher.withLock { $0 = watcher }
        watcher.start()
    }

    /// Asks for one scan of these directories' own entries (and what is new below them) and of
    /// these trees whole.
    func refresh(_ directories: Set<String>, trees: Set<String>) {
        guard !directories.isEmpty || !trees.isEmpty else { return }
        let work = directories.map { ($0, false) } + trees.map { ($0, true) }
        // Numbered and queued as one step, as `enqueueUpdate` does.
        enqueueing.withLock { _ in queueRefresh(nextJob(), directories: directories, trees: trees, work: work) }
    }

    private func queueRefresh(_ job: Int, directories: Set<String>, trees: Set<String>, work: [(String, Bool)]) {
        scans.async { [self] in
            run(job, path: (directories.union(trees)).sorted().joined(separator: ", ")) { now in
                var total = ScanOutcome()
                for (directory, recursive) in work.sorted(by: { $0.0 < $1.0 }) {
                    let outcome = try scanner.scan(under: directory, rescan: false, now: now, recursive: recursive)
                    total.added += outcome.added
                    total.changed += outcome.changed
                    total.removed += outcome.removed
                    total.failed += outcome.failed
                    total.offline.merge(outcome.offline) { $1 }
                    total.reached.formUnion(outcome.reached)
                }
                return total
            }
        }
    }

    /// Asks for a scan of `path` (relative to the music directory; "" or "/" for all of it);
    /// with `rescan`, unchanged files are read again. Returns the job's number at once: a
    /// waiting scan's when it covers the request (the same path or a parent), else a new one's.
    /// Refused before anything is queued: a path `scanPath` refuses, and a new scan while
    /// `updateQueueLimit` wait.
    @discardableResult
    package func update(_ path: String = "", rescan: Bool = false) throws(LibraryUpdateRefusal) -> Int {
        try enqueueUpdate(Library.scanPath(path), rescan: rescan, limited: true)
    }

    /// A client's scan path as scans take it, relative to the music directory ("" for all of
    /// it; "/", empty and "." components are dropped). Refused: a NUL byte (C and SQLite end
    /// the string there: "Dir\0" would scan "Dir/" with each of its entries taken for "Dir"
    /// itself, and remove every song under it), an absolute path, and "..".
    package static func scanPath(_ text: String) throws(LibraryUpdateRefusal) -> String {
        guard !text.utf8.contains(0) else { throw .badPath("the path contains a NUL byte") }
        guard !text.hasPrefix("/") || text.allSatisfy({ $0 == "/" }) else {
            throw .badPath("'\(text)' is absolute: give a path relative to the music directory")
        }
        let parts = text.split(separator: "/").filter { $0 != "." }
        guard !parts.contains("..") else { throw .badPath("'\(text)' leads out of the music directory ('..')") }
        return parts.joined(separator: "/")
    }

    /// Queues a scan of `path` (already checked), or answers with a waiting one that covers it;
    /// `limited`: refused while `updateQueueLimit` wait (the watcher's whole-tree scan is not).
    private func enqueueUpdate(_ path: String, rescan: Bool, limited: Bool) throws(LibraryUpdateRefusal) -> Int {
        // Numbered and queued as one step (the watcher and the clients ask from their own
        // threads): the scans run in the order of their numbers, which clients wait on.
        try enqueueing.withLock { _ throws(LibraryUpdateRefusal) in try numberAndQueue(path, rescan: rescan, limited: limited) }
    }

    private func numberAndQueue(_ path: String, rescan: Bool, limited: Bool) throws(LibraryUpdateRefusal) -> Int {
        enum Answer {
            case covered(Int)
            case queued(Int)
            case full
        }
        let answer: Answer = state.withLock { state in
            if let covering = state.waiting.first(where: { $0.covers(path, rescan: rescan) }) { return .covered(covering.job) }
            if limited, state.waiting.count >= Library.updateQueueLimit { return .full }
            state.nextJob += 1
            state.queued += 1
            state.waiting.append(WaitingScan(job: state.nextJob, path: path, rescan: rescan))
            return .queued(state.nextJob)
        }
        switch answer {
        case .full:
            throw .queueFull
        case .covered(let job):
            return job
        case .queued(let job):
            // Outside the state lock: after `shutdown` the job runs here, and `run` takes it.
            scans.async { [self] in
                run(job, path: path.isEmpty ? "/" : path) { now in try scanner.scan(under: path, rescan: rescan, now: now) }
            }
            return job
        }
    }

    private func nextJob() -> Int {
        state.withLock { state in
            state.nextJob += 1
            state.queued += 1
            return state.nextJob
        }
    }

    /// The scan running now, if any (MPD's `updating_db`).
    package var updatingJob: Int? { state.withLock { $0.running ?? ($0.queued > 0 ? $0.nextJob : nil) } }

    /// Why the music directory, or a mount point below it, looked gone when last scanned, if
    /// any did: each part's reason names its path.
    package var offline: String? {
        state.withLock { state in
            state.offline.isEmpty ? nil : state.offline.sorted { $0.key < $1.key }.map(\.value).joined(separator: "; ")
        }
    }

    /// Scan news, for `idle update` / `idle database` and the JSON-RPC events.
    package func subscribe() -> AsyncStream<LibraryNews> { news.subscribe() }

    /// Runs scan job `job` (on the scan thread): `scan` does the work, given the time.
    private func run(_ job: Int, path: String, _ scan: (Int) throws -> ScanOutcome) {
        // Scans wait for playback, the request path and everyone's disk reads.
        if tonearm_idle_priority_current_thread() != 0 {
            logger.notice("the scan thread keeps its priority", metadata: ["error": "\(String(cString: strerror(errno)))"])
        }
        state.withLock { state in
            state.queued -= 1
            state.running = job
            // From now on a new request is not covered by this scan: it may have passed its path.
            state.waiting.removeAll { $0.job == job }
        }
        news.yield(.updateStarted(job: job))
        logger.info("library scan started", metadata: ["job": "\(job)", "path": "\(path)"])
        let began = Date()
        do {
            var outcome = try scan(Int(began.timeIntervalSince1970))
            outcome.seconds = Date().timeIntervalSince(began)
            state.withLock { state in
                state.running = nil
                // The music directory is there; of what is below it, what this scan reached.
                state.offline[""] = nil
                for path in outcome.reached {
                    state.offline = state.offline.filter { $0.key != path && !$0.key.hasPrefix(path + "/") }
                }
                state.offline.merge(outcome.offline) { $1 }
            }
            for (path, reason) in outcome.offline.sorted(by: { $0.key < $1.key }) {
                logger.warning(
                    "part of the music directory is offline; its entries are kept",
                    metadata: ["job": "\(job)", "directory": "\(path)", "reason": "\(reason)"])
            }
            logger.info(
                "library scan finished",
                metadata: [
                    "job": "\(job)", "added": "\(outcome.added)", "changed": "\(outcome.changed)", "removed": "\(outcome.removed)",
                    "failed": "\(outcome.failed)", "seconds": "\(String(format: "%.2f", outcome.seconds))",
                ])
            news.yield(.updateFinished(job: job, outcome))
        } catch let offline as LibraryOffline {
            state.withLock { state in
                state.running = nil
                state.offline[""] = offline.description
            }
            logger.warning("library scan stopped; every entry is kept", metadata: ["job": "\(job)", "reason": "\(offline)"])
            news.yield(.offline(job: job, reason: offline.description))
        } catch {
            state.withLock { $0.running = nil }
            logger.error("library scan failed", metadata: ["job": "\(job)", "error": "\(error)"])
            news.yield(.updateFinished(job: job, ScanOutcome()))
        }
    }

    // MARK: Reading (the caller's thread)

    var search: LibrarySearch { LibrarySearch(database: database) }

    package func stats() throws -> LibraryStats { try LibraryReader(database: database).stats() }

    /// `uri`'s songs then subdirectories, or the one song it names; nil: no such entry.
    package func list(_ uri: String, withTags: Bool = true) throws -> [LibraryEntry]? {
        try LibraryReader(database: database).list(uri, withTags: withTags)
    }

    /// The songs the library holds of `uris` (relative to the music directory), in their order;
    /// nil where it holds none.
    package func songs(at uris: [String]) throws -> [LibrarySong?] {
        try LibraryReader(database: database).songs(at: uris)
    }

    /// The songs a search means, with their tags.
    package func songs(_ query: LibraryQuery) throws -> [LibrarySong] {
        try search.songs(query)
    }

    /// The songs a search means, each handed to `visit` as the database holds it (its bytes
    /// valid only during its visit; its name is its URI).
    package func visitSongs(_ query: LibraryQuery, _ visit: (LibrarySongView) throws -> Void) throws {
        try search.visitSongs(query, visit)
    }

    /// How many songs `filter` means and how long they last (seconds), in all or by the values
    /// of `group` (sorted as MPD sorts them, byte by byte; a song without the tag counts under "").
    package func count(_ filter: LibraryFilter, groupedBy group: MediaTag?) throws -> [(group: String?, songs: Int, playtime: Double)] {
        try search.totals(filter, groupedBy: group)
    }

    /// The distinct values of `tag` (nil: the songs' URIs) among the songs `filter` means, each
    /// with the values of `groups` before it: rows sorted as MPD sorts them, byte by byte, the
    /// groups first. A song without a tag gives "" for it.
    package func distinct(_ tag: MediaTag?, filter: LibraryFilter, groups: [MediaTag]) throws -> [[String]] {
        guard let tag else { return try search.songs(LibraryQuery(filter: filter)).map { [$0.uri] } }
        return try search.distinctValues(tag, filter: filter, groups: groups)
    }

    /// A walk of `uri` in MPD's order, taken a part at a time with `next`; nil: no such entry.
    package func startWalk(_ uri: String, withTags: Bool) throws -> LibraryWalk? {
        try LibraryReader(database: database).startWalk(uri, withTags: withTags)
    }

    /// The walk's next entries, at least `count` unless it is done.
    package func next(_ walk: inout LibraryWalk, atLeast count: Int) throws -> [LibraryEntry] {
        try LibraryReader(database: database).next(&walk, atLeast: count)
    }

    /// The walk's next part, an entry at a time: a song's bytes are valid only during its visit.
    package func next(_ walk: inout LibraryWalk, atLeast count: Int, _ visit: (LibraryPassItem) throws -> Void) throws {
        try LibraryReader(database: database).next(&walk, atLeast: count, visit)
    }

    /// Everything under `uri` in MPD's order, a part at a time; false: no such entry.
    package func walk(_ uri: String, withTags: Bool, _ visit: ([LibraryEntry]) throws -> Void) throws -> Bool {
        try LibraryReader(database: database).walk(uri, withTags: withTags, visit)
    }
}

/// Why `Library.update` queued nothing.
package enum LibraryUpdateRefusal: Error, Sendable, Equatable, CustomStringConvertible {
    /// Not a path inside the music directory (a NUL byte, absolute, `..`); says why.
    case badPath(String)
    /// `Library.updateQueueLimit` scans are waiting already.
    case queueFull

    package var description: String {
        switch self {
        case .badPath(let why): why
        case .queueFull: "Update queue is full (\(Library.updateQueueLimit) scans are waiting)"
        }
    }
}
