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
///
/// When the music directory itself goes (removed, moved away, unmounted) or a mount at, above
/// or below it comes or goes (the mount table, /proc/self/mountinfo, is polled for its
/// changes: inotify says nothing of a mount), every watch goes; the directory above it is
/// watched until the music directory is there again, then the tree is watched anew and
/// scanned whole (a scan of a missing or empty music directory keeps every entry).
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

    init(
        root: String, followSymlinks: Bool, rescanInterval: Double, logger: Logger,
        refresh: @escaping @Sendable (Set<String>, Set<String>) -> Void, rescanAll: @escaping @Sendable () -> Void
    ) {
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

    fileprivate static let mask = UInt32(
        IN_CREATE | IN_DELETE | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB
            | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)

    /// The watch thread: every watch and what it names live here and nowhere else.
    private func run() {
        let inotify = inotify_init1(Int32(IN_CLOEXEC))
        guard inotify >= 0 else {
            fallBack("inotify cannot be used (\(String(cString: strerror(errno))))")
            return
        }
        defer { close(inotify) }
        // Polled for POLLPRI: the kernel flags it at each mount or unmount (proc(5)).
        let mountTable = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC)
        defer { if mountTable >= 0 { close(mountTable) } }
        var mounts = Self.mountPoints(around: root)
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
            var fds = [
                pollfd(fd: inotify, events: Int16(POLLIN), revents: 0), pollfd(fd: wake, events: Int16(POLLIN), revents: 0),
                pollfd(fd: mountTable, events: Int16(POLLPRI), revents: 0),
            ]
            let ready = poll(&fds, 3, timeout)
            if ready < 0 && errno == EINTR { continue }
            if fds[1].revents != 0 { return }
            if ready == 0 {
                // Quiet (or waited long enough): scan what changed.
                scanChanges()
                continue
            }
            var rootGone = false
            if fds[2].revents != 0 {
                let now = Self.mountPoints(around: root)
                if now != mounts { rootGone = true }
                mounts = now
            }
            var overflowed = false
            let count = fds[0].revents == 0 ? 0 : buffer.withUnsafeMutableBytes { read(inotify, $0.baseAddress!, $0.count) }
            for event in Self.events(buffer[..<max(0, count)]) where !rootGone {
                if event.mask & UInt32(IN_Q_OVERFLOW) != 0 {
                    overflowed = true
                    continue
                }
                guard let directory = watches.path(event.wd) else { continue }
                if event.mask & UInt32(IN_IGNORED) != 0 {
                    watches.forget(event.wd)
                    if directory.isEmpty { rootGone = true }
                    continue
                }
                if event.mask & UInt32(IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT) != 0, directory.isEmpty {
                    // The music directory itself: moved away (`mv music music.old`: its watch
                    // would follow the old tree), removed or unmounted.
                    rootGone = true
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
                // Every watch goes (they follow the old tree, or a file system no longer
                // shown); the path is watched again once a directory is there, and scanned.
                watches.removeAll()
                changed.removeAll()
                trees.removeAll()
                firstChange = nil
                var info = stat()
                if !(stat(root, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR) {
                    // Meanwhile the scan says the music directory is offline and keeps every entry.
                    logger.notice("the music directory went away; it is watched again once it is back", metadata: ["directory": "\(root)"])
                    rescanAll()
                }
                guard waitForRoot(inotify, mountTable: mountTable, mounts: &mounts, &buffer), watchWholeTree(&watches) else { return }
                logger.info("watching the music directory again", metadata: ["directories": "\(watches.count)"])
                rescanAll()
                continue
            }
            if overflowed {
                // Changes were lost: every directory is watched again (a known one keeps its
                // watch) and the whole tree is compared with the database.
                logger.notice("the kernel dropped watch events; the library is scanned whole")
                guard watchWholeTree(&watches) else { return }
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

    /// Sleeps until the music directory is a directory again, watching the nearest directory
    /// above it that is there (watched first, then looked at: one made in between is not
    /// missed) and the mount table. False: `stop` came meanwhile.
    private func waitForRoot(_ inotify: Int32, mountTable: Int32, mounts: inout Set<String>, _ buffer: inout [UInt8]) -> Bool {
        while true {
            var above = (root as NSString).deletingLastPathComponent
            var wd: Int32 = -1
            while true {
                wd = inotify_add_watch(inotify, above, UInt32(IN_CREATE | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR))
                if wd >= 0 || above == "/" || above.isEmpty { break }
                above = (above as NSString).deletingLastPathComponent
            }
            defer { if wd >= 0 { inotify_rm_watch(inotify, wd) } }
            var info = stat()
            if stat(root, &info) == 0, info.st_mode & S_IFMT == S_IFDIR { return true }
            var look = false
            while !look {
                var fds = [
                    pollfd(fd: inotify, events: Int16(POLLIN), revents: 0), pollfd(fd: wake, events: Int16(POLLIN), revents: 0),
                    pollfd(fd: mountTable, events: Int16(POLLPRI), revents: 0),
                ]
                if poll(&fds, 3, -1) < 0 { continue }  // EINTR
                if fds[1].revents != 0 { return false }
                if fds[2].revents != 0 {
                    mounts = Self.mountPoints(around: root)
                    look = true
                }
                guard fds[0].revents != 0 else { continue }
                let count = buffer.withUnsafeMutableBytes { read(inotify, $0.baseAddress!, $0.count) }
                // Something made, moved or gone there (or events lost): looked at again. The
                // old watches' IN_IGNORED and the like name other descriptors.
                for event in Self.events(buffer[..<max(0, count)]) where event.wd == wd || event.mask & UInt32(IN_Q_OVERFLOW) != 0 {
                    look = true
                }
            }
        }
    }

    /// The mount points at, above or below the music directory (the fifth field of
    /// /proc/self/mountinfo, its octal escapes undone): a change among them changes what the
    /// music directory shows.
    static func mountPoints(around root: String) -> Set<String> {
        let file = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC)
        guard file >= 0 else { return [] }
        defer { close(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 << 10)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(file, $0.baseAddress!, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            bytes += chunk[..<count]
        }
        var points = Set<String>()
        for line in bytes.split(separator: UInt8(ascii: "\n")) {
            let fields = line.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
            guard fields.count > 4 else { continue }
            var point: [UInt8] = []
            var index = fields[4].startIndex
            while index < fields[4].endIndex {
                if fields[4][index] == UInt8(ascii: "\\"), index + 3 < fields[4].endIndex,
                    let value = UInt8(String(decoding: fields[4][(index + 1)...(index + 3)], as: UTF8.self), radix: 8)
                {
                    point.append(value)
                    index += 4
                } else {
                    point.append(fields[4][index])
                    index += 1
                }
            }
            let path = String(decoding: point, as: UTF8.self)
            if path == root || path.hasPrefix(root + "/") || root.hasPrefix(path.hasSuffix("/") ? path : path + "/") {
                // With its mount id: a share mounted over an automount point keeps the path.
                points.insert(String(decoding: fields[0], as: UTF8.self) + " " + path)
            }
        }
        return points
    }

    /// Watches every directory of the tree again (a known one keeps its watch); false when the
    /// thread is to end: asked to stop, or past the kernel's watch limit (then it falls back to
    /// timed whole scans).
    private func watchWholeTree(_ watches: inout Watches) -> Bool {
        switch watches.add(tree: "") {
        case .stopped: return false
        case .limit(let failure):
            rescanAll()
            fallBack(failure)
            return false
        case .done: return true
        }
    }

    /// Without a watch: a scan of the whole tree every `rescanInterval` seconds, until `stop`.
    private func fallBack(_ reason: String) {
        guard rescanInterval > 0 else {
            logger.warning(
                "the music directory is not watched; changes are seen at the next update",
                metadata: ["reason": "\(reason)"])
            var fds = [pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
            while poll(&fds, 1, -1) < 0 && errno == EINTR {}
            return
        }
        logger.warning(
            "the music directory is not watched; it is scanned every rescan_interval_s instead",
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
                return (
                    raw.loadUnaligned(fromByteOffset: base, as: Int32.self),
                    raw.loadUnaligned(fromByteOffset: base + 4, as: UInt32.self),
                    Int(raw.loadUnaligned(fromByteOffset: base + 12, as: UInt32.self))
                )
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

    enum Outcome {
        case done, stopped
        case limit(String)
    }

    var count: Int { paths.count }
    func path(_ wd: Int32) -> String? { paths[wd] }
    mutating func forget(_ wd: Int32) { paths[wd] = nil }

    /// Drops every watch (the kernel's IN_IGNORED for each then names no directory).
    mutating func removeAll() {
        for wd in paths.keys { inotify_rm_watch(inotify, wd) }
        paths.removeAll()
    }

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
                visited.insert([UInt64(info.st_dev), UInt64(info.st_ino)]).inserted
            else { continue }
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
