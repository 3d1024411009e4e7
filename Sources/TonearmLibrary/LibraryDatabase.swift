import Foundation
import GRDB
import Logging
import TonearmSync

/// The library's SQLite database (`library.sqlite`, WAL). One owner of writes: every write runs
/// on the `tonearm-db` thread, in the order asked; reads run on the caller's thread through
/// GRDB's pool of readers, which WAL lets go on while a write is in progress, so no reader waits
/// for a scan. Callers never run a read inside a write or the other way round.
final class LibraryDatabase: Sendable {
    private let pool: DatabasePool
    private let writer = JobThread(name: "tonearm-db")
    /// The songs' tags in memory for `list` and `count`, kept in line by the writer.
    let tagIndex = LibraryTagIndex()

    /// Opens (or creates) the database at `path`. A file that is not a database this build can
    /// use is moved aside (`library.sqlite.damaged`) and a new one made: the next scan fills it.
    init(path: String, logger: Logger) throws {
        do {
            pool = try Self.open(path)
        } catch {
            logger.error(
                "the library database cannot be used; it is moved aside and rebuilt by the next scan",
                metadata: ["file": "\(path)", "error": "\(error)"])
            for suffix in ["", "-wal", "-shm"] {
                let file = path + suffix
                guard FileManager.default.fileExists(atPath: file) else { continue }
                try? FileManager.default.removeItem(atPath: path + ".damaged" + suffix)
                try FileManager.default.moveItem(atPath: file, toPath: path + ".damaged" + suffix)
            }
            pool = try Self.open(path)
        }
    }

    private static func open(_ path: String) throws -> DatabasePool {
        var configuration = Configuration()
        configuration.label = "library"
        // Readers are the request path's worker threads and the scan; a few suffice.
        configuration.maximumReaderCount = 4
        configuration.prepareDatabase { db in LibraryFunctions.register(on: db) }
        let pool = try DatabasePool(path: path, configuration: configuration)
        try pool.read { db in _ = try Int.fetchOne(db, sql: "PRAGMA quick_check(1)") }
        try LibrarySchema.migrator.migrate(pool)
        return pool
    }

    deinit { writer.finish() }

    /// Runs `work` in one transaction on the writer thread and waits for it.
    func write<T: Sendable>(_ work: @escaping @Sendable (Database) throws -> T) throws -> T {
        try onWriter { [pool] in try pool.write(work) }
    }

    /// Runs `body` on the writer thread and waits for what it returns.
    private func onWriter<T: Sendable>(_ body: @escaping @Sendable () throws -> T) throws -> T {
        let done = DispatchSemaphore(value: 0)
        let result = Locked<Result<T, any Error>?>(nil)
        writer.async {
            let outcome = Result { try body() }
            result.withLock { $0 = outcome }
            done.signal()
        }
        done.wait()
        return try result.withLock { $0! }.get()
    }

    /// Queues `work` as one transaction on the writer thread and returns at once; `wait` on the
    /// returned write waits for it and says how it went. A scan reads its next files while the
    /// writer writes the last ones.
    /// `committed` runs on the writer thread with what `work` returned, once it is committed.
    func writeLater<T: Sendable>(
        _ work: @escaping @Sendable (Database) throws -> T, committed: @escaping @Sendable (T) -> Void
    ) -> PendingWrite {
        let pending = PendingWrite()
        writer.async { [pool] in
            pending.finish(
                Result {
                    let result = try pool.write(work)
                    committed(result)
                })
        }
        return pending
    }

    /// A write queued by `writeLater`.
    final class PendingWrite: Sendable {
        private let done = DispatchSemaphore(value: 0)
        private let outcome = Locked<Result<Void, any Error>?>(nil)

        fileprivate func finish(_ result: Result<Void, any Error>) {
            outcome.withLock { $0 = result }
            done.signal()
        }

        /// Waits until the write is committed (or failed: then throws why).
        func wait() throws {
            done.wait()
            done.signal()
            try outcome.withLock { $0! }.get()
        }
    }

    /// Sets how much the writer's connection caches of the database, in KiB (SQLite's default
    /// is 2,000), and gives back what it no longer may hold. A scan raises it while it writes:
    /// inserting into the tag indexes reads their pages back again and again otherwise.
    func setWriterCache(kibibytes: Int) throws {
        try onWriter { [pool] in
            try pool.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA cache_size = \(-kibibytes)")
                try db.execute(sql: "PRAGMA shrink_memory")
            }
        }
    }

    /// Reads on the calling thread (a snapshot of the last committed write).
    func read<T>(_ work: (Database) throws -> T) throws -> T {
        try pool.read(work)
    }
}
