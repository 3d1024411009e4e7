import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The state journal (`state.journal` beside `state.json`): every acknowledged change since the
/// last snapshot, one JSON object a line (`{"sequence":N,"change":{…}}`), appended and flushed
/// with `fdatasync` before the command that made it is answered. At start the changes after
/// the snapshot's `journalSequence` are replayed onto it; once a newer snapshot is durable the
/// journal is emptied (the keeper folds it in the background). Appending a line costs the same
/// whatever the queue's length, where rewriting the snapshot costs the whole queue.
///
/// A crash mid-append leaves a last line without its newline: that change was never
/// acknowledged, and is dropped. Any other damage (a line that is no change, a gap in the
/// numbers, a change that does not apply) stops the replay there, and the journal is set aside
/// as `state.journal.bad-<UTC time>` so nothing is written over it.
package struct StateJournal: Sendable {
    package let directory: String
    package var path: String { directory + "/" + Self.name }
    static let name = "state.journal"
    /// The keeper folds the journal into a snapshot long before this; a larger file is damage.
    static let maximumSize = 64 << 20

    package init(directory: String) {
        self.directory = directory
    }

    struct Record: Codable {
        var sequence: Int
        var change: StateChange
    }

    /// What replaying found.
    package struct Replay: Sendable, Equatable {
        /// Changes applied onto the snapshot.
        package var applied = 0
        /// A last line cut short by a crash (a change never acknowledged) was dropped.
        package var droppedTornLine = false
        /// Why the replay stopped early, and where the journal was moved to (nil: it could not be).
        package var problem: String?
        package var keptAs: String?
    }

    /// Applies the journal's changes that `state` does not hold yet, in order.
    package func replay(onto state: inout SavedPlayerState, now: Date = Date()) -> Replay {
        var replay = Replay()
        let bytes: [UInt8]
        switch StateFile.readRegularFile(path, limit: Self.maximumSize) {
        case .success(let read): bytes = read
        case .failure(.missing): return replay
        case .failure(let refusal):
            replay.problem = refusal.description
            replay.keptAs = setAside(now: now)
            return replay
        }
        var lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        // The text after the last newline: empty, or a line a crash cut short.
        let last = lines.removeLast()
        replay.droppedTornLine = !last.isEmpty
        let decoder = JSONDecoder()
        var sequence = state.journalSequence ?? 0
        for (index, line) in lines.enumerated() {
            let problem: String?
            do {
                let record = try decoder.decode(Record.self, from: Data(line))
                if record.sequence <= sequence { continue }  // the snapshot holds it already
                if record.sequence != sequence + 1 {
                    problem = "change \(sequence + 1) is missing (line \(index + 1) is change \(record.sequence))"
                } else {
                    do throws(StateChangeError) {
                        try state.apply(record.change)
                        sequence = record.sequence
                        replay.applied += 1
                        problem = nil
                    } catch {
                        problem = "change \(record.sequence) does not apply: \(error.description)"
                    }
                }
            } catch {
                problem = "line \(index + 1) is not a change (\(error))"
            }
            if let problem {
                replay.problem = problem
                replay.keptAs = setAside(now: now)
                break
            }
        }
        state.journalSequence = sequence
        return replay
    }

    private func setAside(now: Date) -> String? {
        let kept = path + ".bad-" + StateFile.stamp(now)
        return rename(path, kept) == 0 ? kept : nil
    }
}

/// The journal as the keeper writes it: opened once (created 0600 if missing, never through a
/// symbolic link, and only if it is a regular file), appended to and emptied on the keeper's
/// thread alone.
final class JournalWriter {
    let journal: StateJournal
    private var fd: Int32 = -1
    /// Bytes appended since the journal was last emptied.
    private(set) var size = 0

    init(_ journal: StateJournal) { self.journal = journal }

    deinit { if fd >= 0 { close(fd) } }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    private func fail(_ what: String) -> Failure {
        Failure(description: "\(what) \(journal.path): \(String(cString: strerror(errno)))")
    }

    private func open() throws(Failure) -> Int32 {
        if fd >= 0 { return fd }
        let opened = Glibc.open(journal.path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0o600)
        guard opened >= 0 else { throw fail("cannot open") }
        var info = stat()
        guard fstat(opened, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            close(opened)
            throw Failure(description: "\(journal.path) is not a regular file")
        }
        fd = opened
        size = Int(info.st_size)
        // The journal's name must survive a power cut too, should this open have created it.
        let directory = Glibc.open(journal.directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directory >= 0 {
            fsync(directory)
            close(directory)
        }
        return fd
    }

    /// Appends `bytes` (whole lines) and flushes them to disk. A failed append is cut off again,
    /// so the next one starts on a fresh line.
    func append(_ bytes: [UInt8]) throws(Failure) {
        let fd = try open()
        var written = 0
        while written < bytes.count {
            let result = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + written, $0.count - written) }
            if result < 0 {
                if errno == EINTR { continue }
                let failure = fail("cannot write")
                ftruncate(fd, off_t(size))
                throw failure
            }
            written += result
        }
        guard fdatasync(fd) == 0 else {
            let failure = fail("cannot flush")
            ftruncate(fd, off_t(size))
            throw failure
        }
        size += bytes.count
    }

    /// Empties the journal: a snapshot holds all it held. Not flushed: should the emptying be
    /// lost, the replay skips what the snapshot holds.
    func empty() {
        guard size > 0 || fd < 0, let fd = try? open() else { return }
        if ftruncate(fd, 0) == 0 { size = 0 }
    }
}
