import Foundation
import TonearmSync

#if canImport(Glibc)
    import Glibc
#endif

/// The stored playlists (`library.playlist_directory`): one `NAME.m3u` per playlist, one URI per
/// line as MPD writes them (relative to the music directory, an absolute path, or a stream's URL).
///
/// One owner of the directory: every change runs on the store's own thread (`tonearm-playlists`),
/// so two clients editing one playlist at once each see the other's change. A change replaces
/// the file whole (a temporary file, fsync, rename), so a reader on any thread sees the old list
/// or the new one, and a power cut loses neither. Reads need no thread of their own.
package final class PlaylistStore: Sendable {
    /// Where the playlists are (created at the first write).
    package let directory: String
    private let writer = JobThread(name: "tonearm-playlists")

    /// More entries than a stored playlist may hold (the queue's own bound is of this order).
    package static let maximumLength = 65_536

    package init(directory: String) {
        self.directory = directory
    }

    deinit { writer.finish() }

    package struct Summary: Sendable, Equatable {
        package let name: String
        /// Seconds since 1970 (the file's modification time).
        package let modified: Int
    }

    package enum Failure: Error, Sendable, Equatable, CustomStringConvertible {
        case badName
        case noSuchPlaylist
        case exists
        case tooLarge
        /// An index past the end (`playlistdelete`).
        case badIndex
        /// A move's index past the end.
        case badRange
        /// An insert's position past the end.
        case badPosition
        case io(String)

        package var description: String {
            switch self {
            case .badName: "Bad playlist name"
            case .noSuchPlaylist: "No such playlist"
            case .exists: "Playlist already exists"
            case .tooLarge: "Stored playlist is too large (at most \(PlaylistStore.maximumLength) entries)"
            case .badIndex: "Bad song index"
            case .badRange: "Bad range"
            case .badPosition: "Bad position"
            case .io(let message): message
            }
        }
    }

    /// A name MPD would accept: not empty, no `/` and no line break; and short enough to be a file name.
    package static func isValid(_ name: String) -> Bool {
        !name.isEmpty && !name.contains { $0 == "/" || $0 == "\n" || $0 == "\r" || $0 == "\0" }
            && name.utf8.count + 4 <= Int(NAME_MAX)
    }

    // MARK: Reading (any thread)

    /// Every stored playlist, by name.
    package func list() -> [Summary] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.filter { $0.hasSuffix(".m3u") }.sorted().compactMap { file in
            var info = stat()
            guard stat(directory + "/" + file, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
            return Summary(name: String(file.dropLast(4)), modified: Int(info.st_mtim.tv_sec))
        }
    }

    package func contains(_ name: String) -> Bool {
        guard Self.isValid(name) else { return false }
        var info = stat()
        return stat(path(name), &info) == 0 && info.st_mode & S_IFMT == S_IFREG
    }

    /// The playlist's entries, as stored.
    package func entries(_ name: String) throws(Failure) -> [String] {
        guard Self.isValid(name) else { throw .badName }
        let fd = open(path(name), O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw errno == ENOENT ? .noSuchPlaylist : Self.failure("read", name) }
        defer { close(fd) }
        var data = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress!, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { throw Self.failure("read", name) }
            if count == 0 { break }
            data += chunk[..<count]
        }
        return String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline).compactMap { line in
            let entry = line.trimmingCharacters(in: .whitespaces)
            return entry.isEmpty || entry.hasPrefix("#") ? nil : entry
        }
    }

    // MARK: Changing (the store's thread)

    /// A new playlist of `entries`; one of that name already there is `exists`.
    package func create(_ name: String, entries: [String]) throws(Failure) {
        try onWriter { () throws(Failure) in
            guard Self.isValid(name) else { throw .badName }
            guard !self.contains(name) else { throw .exists }
            try self.write(name, entries)
        }
    }

    /// Changes a playlist's entries in place. `creating`: a missing playlist starts empty
    /// (`playlistadd`); otherwise it is `noSuchPlaylist`.
    package func edit(
        _ name: String, creating: Bool = false,
        _ change: @escaping @Sendable (inout [String]) throws(Failure) -> Void
    ) throws(Failure) {
        try onWriter { () throws(Failure) in
            var entries: [String]
            do throws(Failure) { entries = try self.entries(name) } catch {
                guard error == .noSuchPlaylist, creating else { throw error }
                entries = []
            }
            try change(&entries)
            try self.write(name, entries)
        }
    }

    package func remove(_ name: String) throws(Failure) {
        try onWriter { () throws(Failure) in
            guard Self.isValid(name) else { throw .badName }
            guard unlink(self.path(name)) == 0 else { throw errno == ENOENT ? .noSuchPlaylist : Self.failure("remove", name) }
        }
    }

    /// Renames `name`; a playlist already called `newName` is `exists`.
    package func rename(_ name: String, to newName: String) throws(Failure) {
        try onWriter { () throws(Failure) in
            guard Self.isValid(name), Self.isValid(newName) else { throw .badName }
            guard self.contains(name) else { throw .noSuchPlaylist }
            guard !self.contains(newName) else { throw .exists }
            guard Glibc.rename(self.path(name), self.path(newName)) == 0 else { throw Self.failure("rename", name) }
            self.syncDirectory()
        }
    }

    private func path(_ name: String) -> String { directory + "/" + name + ".m3u" }

    /// Replaces the file whole: written beside it, synced, then renamed over it.
    private func write(_ name: String, _ entries: [String]) throws(Failure) {
        guard entries.count <= Self.maximumLength else { throw .tooLarge }
        guard entries.allSatisfy({ !$0.contains { $0.isNewline } }) else { throw .io("an entry of \(name) holds a line break") }
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw .io("cannot create the playlist directory \(directory): \(error.localizedDescription)")
        }
        // One writer thread, so one temporary name serves (and a long playlist name fits).
        let temporary = directory + "/.tonearm-playlist.tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw Self.failure("write", name) }
        var bytes = Array(entries.map { $0 + "\n" }.joined().utf8)
        var written = 0
        while written < bytes.count {
            let result = bytes.withUnsafeMutableBytes { Glibc.write(fd, $0.baseAddress! + written, $0.count - written) }
            if result < 0 && errno == EINTR { continue }
            guard result > 0 else { break }
            written += result
        }
        let complete = written == bytes.count && fsync(fd) == 0
        close(fd)
        bytes.removeAll()
        guard complete, Glibc.rename(temporary, path(name)) == 0 else {
            let failure = Self.failure("write", name)
            unlink(temporary)
            throw failure
        }
        syncDirectory()
    }

    /// The rename itself outlives a power cut once the directory is synced.
    private func syncDirectory() {
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        fsync(fd)
        close(fd)
    }

    private static func failure(_ verb: String, _ name: String) -> Failure {
        .io("cannot \(verb) playlist \(name): \(String(cString: strerror(errno)))")
    }

    /// Runs `work` on the store's thread and waits for it.
    private func onWriter(_ work: @escaping @Sendable () throws(Failure) -> Void) throws(Failure) {
        let done = DispatchSemaphore(value: 0)
        let outcome = Locked<Failure?>(nil)
        writer.async {
            do throws(Failure) { try work() } catch { outcome.withLock { $0 = error } }
            done.signal()
        }
        done.wait()
        if let failure = outcome.withLock({ $0 }) { throw failure }
    }
}
