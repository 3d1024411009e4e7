import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The state file (`state.json` in `state.directory`): read once at start, written whole each
/// time, atomically: a temporary file is written and flushed to disk, renamed over the old one,
/// and the directory is flushed too, so a power cut leaves the old state or the new, never a
/// torn one. Written by hand on POSIX calls because Foundation's atomic write flushes neither
/// the file nor the directory.
public struct StateFile: Sendable {
    public let directory: String
    public var path: String { directory + "/state.json" }
    var temporaryPath: String { directory + "/state.json.tmp" }
    public var corruptPath: String { directory + "/state.json.corrupt" }

    public init(directory: String) {
        self.directory = directory
    }

    public enum Loaded: Sendable {
        /// No state yet (first start, or `state.json` missing).
        case none
        case state(SavedPlayerState)
        /// The file was unreadable as a state: it was moved to `corruptPath` (why, and whether
        /// the move itself worked).
        case setAside(reason: String, moved: Bool)
        /// The file could not be read at all (permissions, I/O): left where it is.
        case unreadable(String)
    }

    public func load() -> Loaded {
        let data: Data
        switch Self.readAll(path) {
        case .success(let bytes): data = Data(bytes)
        case .failure(let error) where error.code == ENOENT: return .none
        case .failure(let error): return .unreadable("cannot read \(path): \(String(cString: strerror(error.code)))")
        }
        let reason: String
        do {
            let state = try JSONDecoder().decode(SavedPlayerState.self, from: data)
            guard let problem = state.problem else { return .state(state) }
            reason = problem
        } catch {
            reason = data.isEmpty ? "the file is empty" : "not a state file (\(Self.describe(error)))"
        }
        let moved = rename(path, corruptPath) == 0
        return .setAside(reason: reason, moved: moved)
    }

    /// The whole file, read with POSIX calls (a few KiB, once at start). Not `Data(contentsOf:)`:
    /// FoundationEssentials leaks its 4 KiB read buffer when the file is empty (seen with LSan).
    private static func readAll(_ path: String) -> Result<[UInt8], Errno> {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return .failure(Errno(errno)) }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                return .failure(Errno(errno))
            }
            if count == 0 { return .success(bytes) }
            bytes += buffer[..<count]
        }
    }

    struct Errno: Error, Equatable {
        let code: Int32
        init(_ code: Int32) { self.code = code }
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

    public struct WriteError: Error, CustomStringConvertible {
        public let description: String
    }

    /// Replaces the state file with `data`, atomically and durably (see the type's comment).
    public func write(_ data: Data) throws(WriteError) {
        func fail(_ what: String) -> WriteError {
            WriteError(description: "\(what): \(String(cString: strerror(errno)))")
        }
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch {
            throw WriteError(description: "cannot create \(directory): \(error.localizedDescription)")
        }
        let fd = open(temporaryPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw fail("cannot create \(temporaryPath)") }
        var written = 0
        let failure: WriteError? = data.withUnsafeBytes { raw -> WriteError? in
            while written < raw.count {
                let result = Glibc.write(fd, raw.baseAddress! + written, raw.count - written)
                if result < 0 {
                    if errno == EINTR { continue }
                    return fail("cannot write \(temporaryPath)")
                }
                written += result
            }
            return fsync(fd) == 0 ? nil : fail("cannot flush \(temporaryPath)")
        }
        close(fd)
        if let failure {
            unlink(temporaryPath)
            throw failure
        }
        guard rename(temporaryPath, path) == 0 else {
            let error = fail("cannot rename \(temporaryPath) to \(path)")
            unlink(temporaryPath)
            throw error
        }
        let directoryFD = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard directoryFD >= 0 else { throw fail("cannot open \(directory)") }
        defer { close(directoryFD) }
        guard fsync(directoryFD) == 0 else { throw fail("cannot flush \(directory)") }
    }

    /// Where the state lives by default: `$STATE_DIRECTORY` (systemd's `StateDirectory=`, the
    /// first of a colon-separated list), else `/var/lib/tonearm` for root, else
    /// `$XDG_STATE_HOME/tonearm` (`~/.local/state/tonearm`).
    public static func defaultDirectory(environment: [String: String], isRoot: Bool) -> String {
        if let systemd = environment["STATE_DIRECTORY"]?.split(separator: ":").first, !systemd.isEmpty {
            return String(systemd)
        }
        if isRoot { return "/var/lib/tonearm" }
        if let xdg = environment["XDG_STATE_HOME"], xdg.hasPrefix("/") { return xdg + "/tonearm" }
        let home = environment["HOME"] ?? NSHomeDirectory()
        return home + "/.local/state/tonearm"
    }
}
