import Foundation
import GRDB
import Glibc
import TonearmMedia

/// One scan's walk of the tree, done by every thread of the crew at once. The work is a stack of
/// jobs: a directory to read (its entries, each entry's status, compared with what the database
/// holds), which pushes its subdirectories and its new or changed files, and a few files to read
/// the tags of. Every thread takes the job on top, so the walk goes depth first and the files of
/// the directory just read are read next, by whichever threads are free.
///
/// The changes go to the database writer in the order they are made, one transaction at a time
/// while the threads go on: a directory's row is asked for before its songs' (a directory's
/// jobs exist only once it was read) and a parent's before its children's.
///
/// `@unchecked Sendable`: every `var` is touched only with `condition` locked.
final class ScanWalk: @unchecked Sendable {
    /// A file new or changed since the last scan (`failedBefore`: nil when new).
    struct FileToRead {
        let name: String
        let size: Int
        let mtime: Int
        let failedBefore: Bool?
    }

    private enum Job {
        /// `parentDevice`: the parent's file system (a directory on another is a mount point).
        case directory(String, parentDevice: UInt64?)
        case read(directory: String, [FileToRead])
    }

    /// Files read in one job: enough to be worth taking, few enough that every thread gets some.
    private static let filesPerJob = 8
    /// Changes gathered before they are written in one transaction. Each transaction writes every
    /// page it changed to the WAL, and the tag indexes' pages are changed all over: fewer, larger
    /// ones write each page fewer times (a 20,000-song scan wrote 111,000 pages in batches of 256).
    private static let batchSize = 2048

    private let scanner: LibraryScanner
    private let start: String
    private let recursive: Bool
    /// Every file is read again, changed or not.
    private let rescan: Bool
    private let now: Int
    /// The tree's rows read at once (a recursive scan), else each directory's read as it comes.
    private let knownTree: [String: LibraryScanner.Known]?

    private let condition = NSCondition()
    private var jobs: [Job]
    /// Jobs taken and not yet done.
    private var working = 0
    private var pending: [LibraryScanner.Change]
    private var inFlight: LibraryDatabase.PendingWrite?
    private var outcome = ScanOutcome()
    private var visited = Set<[UInt64]>()
    private var failure: (any Error)?

    init(
        _ scanner: LibraryScanner, start: String, startParentDevice: UInt64?, recursive: Bool, rescan: Bool, now: Int,
        knownTree: [String: LibraryScanner.Known]?, changes: [LibraryScanner.Change]
    ) {
        self.scanner = scanner
        self.start = start
        self.recursive = recursive
        self.rescan = rescan
        self.now = now
        self.knownTree = knownTree
        jobs = [.directory(start, parentDevice: startParentDevice)]
        pending = changes
    }

    /// Walks the tree on every thread of `crew`; returns once every change is written.
    func run(on crew: ScanCrew) throws -> ScanOutcome {
        crew.everyone { self.work() }
        try flush()
        let last = condition.withLock {
            defer { inFlight = nil }
            return inFlight
        }
        try last?.wait()
        return try condition.withLock {
            if let failure { throw failure }
            return outcome
        }
    }

    // MARK: The jobs

    private func work() {
        while let job = next() {
            do {
                switch job {
                case .directory(let directory, let parentDevice): try visit(directory, parentDevice: parentDevice)
                case .read(let directory, let files): try read(files, in: directory)
                }
            } catch {
                condition.withLock {
                    if failure == nil { failure = error }
                }
            }
            condition.withLock {
                working -= 1
                if working == 0 || failure != nil { condition.broadcast() }
            }
        }
    }

    /// The job on top; nil once there is none and none is being done (or one failed).
    private func next() -> Job? {
        condition.lock()
        defer { condition.unlock() }
        while true {
            if failure != nil { return nil }
            if let job = jobs.popLast() {
                working += 1
                return job
            }
            if working == 0 { return nil }
            condition.wait()
        }
    }

    /// Gives the walk what a job found: its changes, what it adds to the outcome, new jobs.
    private func publish(_ changes: [LibraryScanner.Change], jobs new: [Job] = [], _ found: (inout ScanOutcome) -> Void) throws {
        let full = condition.withLock {
            pending.append(contentsOf: changes)
            found(&outcome)
            jobs.append(contentsOf: new)
            if !new.isEmpty { condition.broadcast() }
            return pending.count >= Self.batchSize
        }
        if full { try flush() }
    }

    /// Hands the changes gathered so far to the writer, then waits for the write before it: one
    /// is written while the next is gathered.
    private func flush() throws {
        let before: LibraryDatabase.PendingWrite? = condition.withLock {
            guard !pending.isEmpty else { return nil }
            let changes = pending
            pending.removeAll(keepingCapacity: true)
            let before = inFlight
            let now = self.now
            let index = scanner.database.tagIndex
            inFlight = scanner.database.writeLater({ db in try LibraryScanner.apply(changes, now: now, db) }) {
                index.apply($0)
            }
            return before
        }
        try before?.wait()
    }

    // MARK: A directory

    private func visit(_ directory: String, parentDevice: UInt64?) throws {
        let path = scanner.absolute(directory)
        var info = stat()
        guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else { return }
        let first = condition.withLock { visited.insert([UInt64(info.st_dev), UInt64(info.st_ino)]).inserted }
        guard first else {
            scanner.logger.info("a directory link leads back up the tree; skipped", metadata: ["directory": "\(directory)"])
            return
        }
        let known = try knownTree.map { $0[directory] ?? LibraryScanner.Known() } ?? scanner.known(in: directory)
        let names: [String]
        do {
            names = try scanner.entries(of: path)
        } catch let gone as LibraryOffline where !directory.isEmpty {
            // Below the music directory, a mount that went away: kept whole, the rest scanned.
            return try publish([]) { $0.offline[directory] = gone.description }
        }
        // The same rule as the music directory's for a mount point, one that comes up empty
        // or is not mounted (an empty directory of its parent's file system).
        if known.mount, names.isEmpty, try scanner.songs(under: directory) > 0 {
            return try publish([]) { $0.offline[directory] = "\(path) is empty (a share or disk not mounted?)" }
        }
        let mount = parentDevice.map { $0 != UInt64(info.st_dev) } ?? false
        var changes: [LibraryScanner.Change] = []
        var offline: [String: String] = [:]
        var reached: Set<String> = mount || known.mount ? [directory] : []
        let modified = Int(info.st_mtim.tv_sec)
        // A directory as recorded needs no write (most of a rescan).
        if known.mtime != modified || mount != known.mount {
            changes.append(.directory(path: directory, mtime: modified, mount: mount))
        }
        var seenSongs = Set<String>()
        var seenDirectories = Set<String>()
        var subdirectories: [String] = []
        var toRead: [FileToRead] = []
        for name in names {
            let child = directory.isEmpty ? name : directory + "/" + name
            let childPath = path + "/" + name
            var childInfo = stat()
            var failure: Int32 = 0
            if lstat(childPath, &childInfo) != 0 {
                failure = errno
            } else if childInfo.st_mode & S_IFMT == S_IFLNK {
                guard scanner.followSymlinks else { continue }
                if stat(childPath, &childInfo) != 0 { failure = errno }
            }
            if failure != 0 {
                // A known mount point that cannot be reached (a link to a disk not mounted,
                // a share whose server went away) is offline, not gone.
                if let wasMount = known.directories[child], wasMount || LibraryScanner.mountGone.contains(failure),
                    try scanner.songs(under: child) > 0
                {
                    seenDirectories.insert(child)
                    offline[child] = "\(childPath): \(String(cString: strerror(failure))) (the mount went away?)"
                }
                continue
            }
            switch childInfo.st_mode & S_IFMT {
            case S_IFDIR:
                seenDirectories.insert(child)
                if recursive || directory != start || known.directories[child] == nil { subdirectories.append(child) }
            case S_IFREG where LibraryFiles.isSong(name):
                seenSongs.insert(name)
                let size = Int(childInfo.st_size)
                let modified = Int(childInfo.st_mtim.tv_sec)
                let before = known.songs[name]
                if !rescan, let before, before.size == size, before.mtime == modified { continue }
                toRead.append(FileToRead(name: name, size: size, mtime: modified, failedBefore: before.map(\.failed)))
            default:
                break
            }
        }
        var removed = 0
        for name in known.songs.keys where !seenSongs.contains(name) {
            changes.append(.removeSong(directory: directory, name: name))
            removed += 1
        }
        for gone in Set(known.directories.keys).subtracting(seenDirectories) {
            removed += try scanner.songs(under: gone)
            reached.insert(gone)
            changes.append(.removeDirectory(path: gone))
        }
        // On the stack, the last pushed is taken first: the files in name order, then the
        // subdirectories in name order.
        var new: [Job] = subdirectories.sorted().reversed().map { .directory($0, parentDevice: UInt64(info.st_dev)) }
        let batches = stride(from: 0, to: toRead.count, by: Self.filesPerJob).map {
            Array(toRead[$0..<min($0 + Self.filesPerJob, toRead.count)])
        }
        new += batches.reversed().map { .read(directory: directory, $0) }
        try publish(changes, jobs: new) {
            $0.removed += removed
            $0.offline.merge(offline) { $1 }
            $0.reached.formUnion(reached)
        }
    }

    // MARK: Files

    private func read(_ files: [FileToRead], in directory: String) throws {
        let path = scanner.absolute(directory)
        var changes: [LibraryScanner.Change] = []
        var added = 0
        var changed = 0
        var failed = 0
        for file in files {
            let tags = scanner.crew.reader(path + "/" + file.name)
            if tags == nil {
                failed += 1
                if file.failedBefore != true {
                    let child = directory.isEmpty ? file.name : directory + "/" + file.name
                    scanner.logger.warning("cannot read as media; kept as failed until it changes", metadata: ["file": "\(child)"])
                }
            } else if file.failedBefore == nil {
                added += 1
            } else {
                changed += 1
            }
            changes.append(
                .song(
                    directory: directory, name: file.name, size: file.size, mtime: file.mtime, tags: tags,
                    folded: tags?.entries.map { LibraryFolding.fold($0.value) } ?? [], new: file.failedBefore == nil))
        }
        try publish(changes) {
            $0.added += added
            $0.changed += changed
            $0.failed += failed
        }
    }
}
