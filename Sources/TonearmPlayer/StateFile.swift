import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The state file (`state.json` in `state.directory`): read once at start, written whole each
/// time, atomically: a temporary file is written and flushed to disk, renamed over the old one,
/// and the directory is flushed too, so a power cut leaves the old state or the new, never a
/// torn one. Written by hand on POSIX calls because Foundation's atomic write flushes neither
/// the file nor the directory, and follows symbolic links.
///
/// The directory may hold what the daemon did not put there (a link, a FIFO, a file too large):
/// the file is opened without following a link and without blocking, checked to be a regular
/// file of at most `maximumSize` bytes on the open descriptor, and the temporary file is created
/// anew, never opened through a name someone else may have planted.
package struct StateFile: Sendable {
    package let directory: String
    /// `state.json`; the alarms are kept the same way in `alarms.json`.
    package let name: String
    package var path: String { directory + "/" + name }
    var temporaryName: String { name + ".tmp" }
    /// Far more than any queue (10,000 items take ~2 MiB): a larger file is not a state.
    package static let maximumSize = 64 << 20

    package init(directory: String, name: String = "state.json") {
        self.directory = directory
        self.name = name
    }

    package enum Loaded: Sendable {
        /// No state yet (first start, or `state.json` missing).
        case none
        case state(SavedPlayerState)
        /// The file was not a usable state, or could not be read: it was renamed to `keptAs`
        /// (`state.json.bad-<time>`), so nothing the user had is overwritten.
        case setAside(reason: String, keptAs: String)
        /// As `setAside`, but the rename failed too: the file is where it was, and must not be
        /// written over (the daemon runs without saving).
        case stuck(reason: String, renameError: String)
    }

    /// Reads the saved state. `now` names a file set aside.
    package func load(now: Date = Date()) -> Loaded {
        let reason: String
        switch Self.readRegularFile(path, limit: Self.maximumSize) {
        case .success(let bytes):
            do {
                let state = try JSONDecoder().decode(SavedPlayerState.self, from: Data(bytes))
                guard let problem = state.problem else { return .state(state) }
                reason = problem
            } catch {
                reason = bytes.isEmpty ? "the file is empty" : "not a state file (\(Self.describe(error)))"
            }
        case .failure(.missing):
            return .none
        case .failure(let refusal):
            reason = refusal.description
        }
        return setAside(reason: reason, now: now)
    }

    /// Renames the file to a name no other file has, `state.json.bad-<UTC time>[-n]`.
    func setAside(reason: String, now: Date) -> Loaded {
        let stamp = Self.stamp(now)
        for attempt in 0..<100 {
            let kept = path + ".bad-" + stamp + (attempt == 0 ? "" : "-\(attempt)")
            var info = stat()
            guard lstat(kept, &info) != 0 else { continue }
            if rename(path, kept) == 0 { return .setAside(reason: reason, keptAs: kept) }
            return .stuck(reason: reason, renameError: String(cString: strerror(errno)))
        }
        return .stuck(reason: reason, renameError: "no free name to keep it as")
    }

    static func stamp(_ date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(
            format: "%04d%02d%02dT%02d%02d%02dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
            Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec))
    }

    enum ReadRefusal: Error, Equatable, CustomStringConvertible {
        case missing
        case symbolicLink
        case notRegular(kind: String)
        case tooLarge(Int)
        case failed(String, Int32)

        var description: String {
            switch self {
            case .missing: "no such file"
            case .symbolicLink: "it is a symbolic link (the state file is never read through one)"
            case .notRegular(let kind): "it is a \(kind), not a regular file"
            case .tooLarge(let size): "it is \(size) bytes, over the \(StateFile.maximumSize) a state may have"
            case .failed(let what, let code): "cannot \(what) it: \(String(cString: strerror(code)))"
            }
        }
    }

    /// The whole file, if it is a regular file of at most `limit` bytes. Opened with `O_NOFOLLOW`
    /// (a link is refused) and `O_NONBLOCK` (a FIFO does not block the start); the type and size
    /// are read from the open descriptor, and no more than `limit` bytes are read even if the file
    /// grows meanwhile. POSIX calls, not `Data(contentsOf:)`: FoundationEssentials leaks its read
    /// buffer when the file is empty (seen with LSan).
    static func readRegularFile(_ path: String, limit: Int) -> Result<[UInt8], ReadRefusal> {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)
        guard fd >= 0 else {
            switch errno {
            case ENOENT, ENOTDIR: return .failure(.missing)
            case ELOOP: return .failure(.symbolicLink)
            case let code: return .failure(.failed("open", code))
            }
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return .failure(.failed("examine", errno)) }
        guard info.st_mode & S_IFMT == S_IFREG else { return .failure(.notRegular(kind: kind(of: info.st_mode))) }
        guard info.st_size <= limit else { return .failure(.tooLarge(Int(info.st_size))) }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        var count = 0
        while true {
            if count == bytes.count {
                // Grown since fstat: read on, up to the limit.
                guard bytes.count <= limit else { return .failure(.tooLarge(bytes.count)) }
                bytes += [UInt8](repeating: 0, count: min(max(bytes.count, 4096), limit + 1 - bytes.count))
            }
            let result = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress! + count, $0.count - count) }
            if result < 0 {
                if errno == EINTR { continue }
                return .failure(.failed("read", errno))
            }
            if result == 0 { break }
            count += result
        }
        bytes.removeSubrange(count...)
        return .success(bytes)
    }

    private static func kind(of mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFDIR: "directory"
        case S_IFIFO: "FIFO"
        case S_IFCHR: "character device"
        case S_IFBLK: "block device"
        case S_IFSOCK: "socket"
        default: "special file"
        }
    }

    private static func describe(_ error: Error) -> String {
        switch error {
        case DecodingError.dataCorrupted(let context): context.debugDescription
        case DecodingError.keyNotFound(let key, _): "no '\(key.stringValue)'"
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            "\(context.codingPath.map(\.stringValue).joined(separator: ".")): \(context.debugDescription)"
        default: "\(error)"
        }
    }

    package struct WriteError: Error, CustomStringConvertible {
        package let description: String
    }

    /// Creates the directory (0700) if it is missing.
    package func createDirectory() throws(WriteError) {
        do {
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
        } catch {
            throw WriteError(description: "cannot create \(directory): \(error.localizedDescription)")
        }
    }

    /// Replaces the state file with `data`, atomically and durably (see the type's comment). The
    /// temporary file is made with `O_CREAT | O_EXCL | O_NOFOLLOW` in the directory's descriptor,
    /// after removing whatever has its name (a crash's leftover, or a planted link, which is
    /// removed itself, never followed).
    package func write(_ data: Data) throws(WriteError) {
        func fail(_ what: String) -> WriteError {
            WriteError(description: "\(what): \(String(cString: strerror(errno)))")
        }
        try createDirectory()
        let directoryFD = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard directoryFD >= 0 else { throw fail("cannot open \(directory)") }
        defer { close(directoryFD) }
        let temporary = directory + "/" + temporaryName
        if unlinkat(directoryFD, temporaryName, 0) != 0, errno != ENOENT { throw fail("cannot remove \(temporary)") }
        let fd = openat(directoryFD, temporaryName, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw fail("cannot create \(temporary)") }
        var written = 0
        let failure: WriteError? = data.withUnsafeBytes { raw -> WriteError? in
            while written < raw.count {
                let result = Glibc.write(fd, raw.baseAddress! + written, raw.count - written)
                if result < 0 {
                    if errno == EINTR { continue }
                    return fail("cannot write \(temporary)")
                }
                written += result
            }
            return fsync(fd) == 0 ? nil : fail("cannot flush \(temporary)")
        }
        close(fd)
        if let failure {
            unlinkat(directoryFD, temporaryName, 0)
            throw failure
        }
        guard renameat(directoryFD, temporaryName, directoryFD, name) == 0 else {
            let error = fail("cannot rename \(temporary) to \(path)")
            unlinkat(directoryFD, temporaryName, 0)
            throw error
        }
        guard fsync(directoryFD) == 0 else { throw fail("cannot flush \(directory)") }
    }

    /// Where the state lives by default: `$STATE_DIRECTORY` (systemd's `StateDirectory=`, the
    /// first of a colon-separated list), else `/var/lib/tonearm` for root, else
    /// `$XDG_STATE_HOME/tonearm` (`~/.local/state/tonearm`).
    package static func defaultDirectory(environment: [String: String], isRoot: Bool) -> String {
        if let systemd = environment["STATE_DIRECTORY"]?.split(separator: ":").first, !systemd.isEmpty {
            return String(systemd)
        }
        if isRoot { return "/var/lib/tonearm" }
        if let xdg = environment["XDG_STATE_HOME"], xdg.hasPrefix("/") { return xdg + "/tonearm" }
        let home = environment["HOME"] ?? NSHomeDirectory()
        return home + "/.local/state/tonearm"
    }
}
