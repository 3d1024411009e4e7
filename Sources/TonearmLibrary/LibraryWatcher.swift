import CLinux
import Foundation
import Logging
import TonearmSync

/// Keeps the library in step with the music directory while it changes: inotify watches every
/// directory of the tree, and each directory something happened in is scanned (its own entries,
/// and whatever is new below it) once the tree has been quiet for a moment, so a file copied in
/// is read once, when it is complete.
///
/// One thread, `tonearm-watch`, owns the inotify descriptor and every watch; it sleeps in
/// poll(2) until the kernel reports a change or `stop` wakes it (no timer while nothing
/// changes). When the kernel's watch limit is reached (fs.inotify.max_user_watches), the watch
/// is given up, said once in the log, and the whole tree is scanned every `rescanInterval`
/// seconds instead.
final class LibraryWatcher: Sendable {
    private let root: String
    private let followSymlinks: Bool
    private let rescanInterval: Double
    private let logger: Logger
    /// Asked to scan these directories (relative to the root), their own entries; and these
    /// trees (new directories) whole.
    private let refresh: @Sendable (_ directories: Set<String>, _ trees: Set<String>) -> Void
    /// Asked for an incremental scan of the whole tree.
    private let rescanAll: @Sendable () -> Void
    /// Written by `stop`; the watch thread polls it beside the inotify descriptor, and between
    /// directories while it sets up watches, and leaves.
    private let wake: Int32
    private let finished = DispatchSemaphore(value: 0)

    /// A change is scanned once the tree has been quiet this long (seconds)…
    static let quietPeriod = 0.3
    /// …or this long after the first change, while changes keep coming.
    static let longestWait = 1.5

    init(root: String, followSymlinks: Bool, rescanInterval: Double, logger: Logger,
         refresh: @escaping @Sendable (Set<String>, Set<String>) -> Void, rescanAll: @escaping @Sendable () -> Void) {
        self.root = root
        self.followSymlinks = followSymlinks
        self.rescanInterval = rescanInterval
        self.logger = logger
        self.refresh = refresh
        self.rescanAll = rescanAll
        wake = eventfd(0, Int32(EFD_CLOEXEC))
    }

    deinit { if wake >= 0 { close(wake) } }

    func start() {
        guard wake >= 0 else {
            logger.warning("the music directory is not watched", metadata: ["reason": "eventfd: \(String(cString: strerror(errno)))"])
            finished.signal()
            return
        }
        NamedThread.start("tonearm-watch") { [self] in
            // Setting up the watches walks the tree: it waits for everyone else's reads.
            _ = tonearm_idle_priority_current_thread()
            run()
            finished.signal()
        }
    }

    /// Stops the watch thread; with `waiting`, returns once it has ended (never call that on
    /// the watch thread itself).
    func stop(waiting: Bool = true) {
        guard wake >= 0 else { return }
        var one: UInt64 = 1
        _ = write(wake, &one, 8)
        if waiting { finished.wait() }
    }

    fileprivate static let mask = UInt32(IN_CREATE | IN_DELETE | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB
        | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)

    /// The watch thread: every watch and what it names live here and nowhere else.
    private func run() {
        let inotify = inotify_init1(Int32(IN_CLOEXEC))
        guard inotify >= 0 else {
            fallBack("inotify cannot be used (\(String(cString: strerror(errno))))")
            return
        }
        defer { close(inotify) }
        var watches = Watches(inotify: inotify, root: root, followSymlinks: followSymlinks, wake: wake)
        switch watches.add(tree: "") {
        case .stopped: return
        case .limit(let failure): return fallBack(failure)
        case .done: break
        }
        logger.info("watching the music directory", metadata: ["directories": "\(watches.count)"])
        var changed = Set<String>()
        var trees = Set<String>()
        var firstChange: Double?
        func scanChanges() {
            refresh(changed, trees)
            changed.removeAll()
            trees.removeAll()
            firstChange = nil
        }
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            var timeout: Int32 = -1
            if let firstChange {
                timeout = Int32(max(0, min(Self.quietPeriod, firstChange + Self.longestWait - Self.now())) * 1000)
            }
            var fds = [pollfd(fd: inotify, events: Int16(POLLIN), revents: 0), pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
            let ready = poll(&fds, 2, timeout)
            if ready < 0 && errno == EINTR { continue }
            if fds[1].revents != 0 { return }
            if ready == 0 {
                // Quiet (or waited long enough): scan what changed.
                scanChanges()
                continue
            }
            let count = buffer.withUnsafeMutableBytes { read(inotify, $0.baseAddress!, $0.count) }
            guard count > 0 else { continue }
            var overflowed = false
            var rootGone = false
            for event in Self.events(buffer[..<count]) {
                if event.mask & UInt32(IN_Q_OVERFLOW) != 0 { overflowed = true; continue }
                guard let directory = watches.path(event.wd) else { continue }
                if event.mask & UInt32(IN_IGNORED) != 0 {
                    watches.forget(event.wd)
                    if directory.isEmpty { rootGone = true }
                    continue
                }
                if event.mask & UInt32(IN_DELETE_SELF | IN_MOVE_SELF) != 0 {
                    // Its parent hears of it too; the parent's scan removes it.
                    continue
                }
                guard !event.name.hasPrefix(".") else { continue }
                let child = directory.isEmpty ? event.name : directory + "/" + event.name
                var isDirectory = event.mask & UInt32(IN_ISDIR) != 0
                if event.mask & UInt32(IN_CREATE) != 0, !isDirectory {
                    var info = stat()
                    let isLink = lstat(root + "/" + child, &info) == 0 && info.st_mode & S_IFMT == S_IFLNK
                    if isLink, followSymlinks, stat(root + "/" + child, &info) == 0, info.st_mode & S_IFMT == S_IFDIR {
                        isDirectory = true
                    } else if !isLink && info.st_nlink < 2 {
                        // A file being written: it is read once it is closed (IN_CLOSE_WRITE), not
                        // half done. A link (symbolic or hard) is complete as it appears.
                        continue
                    }
                }
                changed.insert(directory)
                if isDirectory, event.mask & UInt32(IN_CREATE | IN_MOVED_TO) != 0 {
                    // A new directory: watched, and scanned whole (a directory replaced under a
                    // known name too).
                    trees.insert(child)
                    switch watches.add(tree: child) {
                    case .stopped: return
                    case .limit(let failure):
                        rescanAll()
                        return fallBack(failure)
                    case .done: break
                    }
                }
            }
            if rootGone {
                // The music directory itself went (unmounted, moved): the scan keeps every entry,
                // and the tree is scanned on the timer until the daemon starts again.
                rescanAll()
                return fallBack("the music directory \(root) went away")
            }
            if overflowed {
                // Changes were lost: every directory is watched again (a known one keeps its
                // watch) and the whole tree is compared with the database.
                logger.notice("the kernel dropped watch events; the library is scanned whole")
                switch watches.add(tree: "") {
                case .stopped: return
                case .limit(let failure):
                    rescanAll()
                    return fallBack(failure)
                case .done: break
                }
                rescanAll()
                changed.removeAll()
                trees.removeAll()
                firstChange = nil
                continue
            }
            if !changed.isEmpty, firstChange == nil { firstChange = Self.now() }
            // Changes that keep coming are scanned at least every `longestWait`.
            if let first = firstChange, Self.now() >= first + Self.longestWait { scanChanges() }
        }
    }

    /// Without a watch: a scan of the whole tree every `rescanInterval` seconds, until `stop`.
    private func fallBack(_ reason: String) {
        guard rescanInterval > 0 else {
            logger.warning("the music directory is not watched; changes are seen at the next update",
                           metadata: ["reason": "\(reason)"])
            var fds = [pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
            while poll(&fds, 1, -1) < 0 && errno == EINTR {}
            return
        }
        logger.warning("the music directory is not watched; it is scanned every rescan_interval_s instead",
                       metadata: ["reason": "\(reason)", "rescan_interval_s": "\(rescanInterval)"])
        while true {
            var fds = [pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
            let ready = poll(&fds, 1, Int32(min(rescanInterval * 1000, Double(Int32.max))))
            if ready < 0 && errno == EINTR { continue }
            if ready > 0 { return }
            rescanAll()
        }
    }

    private struct Event {
        let wd: Int32
        let mask: UInt32
        let name: String
    }

    /// The events in what one read returned (struct inotify_event, each followed by its name).
    private static func events(_ bytes: ArraySlice<UInt8>) -> [Event] {
        var events: [Event] = []
        var offset = bytes.startIndex
        let header = MemoryLayout<inotify_event>.size
        while offset + header <= bytes.endIndex {
            let (wd, mask, length) = bytes.withUnsafeBytes { raw in
                let base = offset - bytes.startIndex
                return (raw.loadUnaligned(fromByteOffset: base, as: Int32.self),
                        raw.loadUnaligned(fromByteOffset: base + 4, as: UInt32.self),
                        Int(raw.loadUnaligned(fromByteOffset: base + 12, as: UInt32.self)))
            }
            let nameBytes = bytes[(offset + header)..<min(bytes.endIndex, offset + header + length)]
            let name = String(decoding: nameBytes.prefix { $0 != 0 }, as: UTF8.self)
            events.append(Event(wd: wd, mask: mask, name: name))
            offset += header + length
        }
        return events
    }

    private static func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}

/// The watch thread's watches: each directory of the tree by its watch descriptor.
private struct Watches {
    let inotify: Int32
    let root: String
    let followSymlinks: Bool
    /// The watcher's stop signal, looked at while a tree is walked.
    let wake: Int32
    private var paths: [Int32: String] = [:]

    init(inotify: Int32, root: String, followSymlinks: Bool, wake: Int32) {
        self.inotify = inotify
        self.root = root
        self.followSymlinks = followSymlinks
        self.wake = wake
    }

    enum Outcome { case done, stopped, limit(String) }

    var count: Int { paths.count }
    func path(_ wd: Int32) -> String? { paths[wd] }
    mutating func forget(_ wd: Int32) { paths[wd] = nil }

    /// Watches `start` and every directory below it (a link back up the tree once); `.limit`
    /// with why the watch cannot go on (the kernel's limit), `.stopped` when `stop` came meanwhile.
    mutating func add(tree start: String) -> Outcome {
        var visited = Set<[UInt64]>()
        var stack = [start]
        var walked = 0
        while let directory = stack.popLast() {
            walked += 1
            if walked % 64 == 0 {
                var fds = [pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
                if poll(&fds, 1, 0) > 0 { return .stopped }
            }
            let path = directory.isEmpty ? root : root + "/" + directory
            var info = stat()
            guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR,
                  visited.insert([UInt64(info.st_dev), UInt64(info.st_ino)]).inserted else { continue }
            let wd = inotify_add_watch(inotify, path, LibraryWatcher.mask | (followSymlinks ? 0 : UInt32(IN_DONT_FOLLOW)))
            if wd < 0 {
                let code = errno
                if code == ENOSPC || code == ENOMEM {
                    return .limit("the kernel's limit of watches is reached (fs.inotify.max_user_watches) at \(path)")
                }
                continue  // gone meanwhile, or not readable: nothing to watch there
            }
            paths[wd] = directory
            guard let handle = opendir(path) else { continue }
            while let entry = readdir(handle) {
                let name = withUnsafePointer(to: entry.pointee.d_name) {
                    $0.withMemoryRebound(to: CChar.self, capacity: Int(NAME_MAX) + 1) { String(cString: $0) }
                }
                guard !name.hasPrefix(".") else { continue }
                let type = entry.pointee.d_type
                guard type == UInt8(DT_DIR) || type == UInt8(DT_UNKNOWN) || (followSymlinks && type == UInt8(DT_LNK)) else { continue }
                stack.append(directory.isEmpty ? name : directory + "/" + name)
            }
            closedir(handle)
        }
        return .done
    }
}
