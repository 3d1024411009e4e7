import Foundation
import TonearmRigs

#if canImport(Glibc)
    import Glibc
#endif

/// One library server under measure: Debian's MPD or tonearmd, on a tree of its own.
private struct LibraryServer {
    let name: String
    let child: Child
    let directory: TemporaryDirectory
    let socket: String

    static func mpd(tree: String) throws -> LibraryServer {
        let directory = try TemporaryDirectory()
        let socket = directory.path("mpd.sock")
        // The output buffer raised: MPD builds a whole `listallinfo` in it (28 MB here), and at
        // its default 8 MiB it drops the client instead (ashuffle#9).
        try """
        music_directory "\(tree)"
        db_file "\(directory.path("database"))"
        log_file "\(directory.path("mpd.log"))"
        bind_to_address "\(socket)"
        max_output_buffer_size "131072"
        audio_output {
            type "null"
            name "null"
        }

        """.write(toFile: directory.path("mpd.conf"), atomically: true, encoding: .utf8)
        let child = try Child.spawn("/usr/bin/mpd", ["--no-daemon", directory.path("mpd.conf")], log: directory.path("stdout"))
        return LibraryServer(name: "peer: Debian's MPD", child: child, directory: directory, socket: socket)
    }

    static func tonearm(_ binary: String, tree: String) throws -> LibraryServer {
        let directory = try TemporaryDirectory()
        // Like for like with MPD, which measures nothing: the songs' loudness (hours of work at
        // idle priority for 100,000 tracks) is not measured meanwhile; `--only loudness` weighs it.
        try "[library]\nmusic_directory = \"\(tree)\"\nmeasure_loudness = false\n"
            .write(toFile: directory.path("tonearmd.toml"), atomically: true, encoding: .utf8)
        let child = try Child.spawn(
            binary,
            [
                "--socket", directory.path("s.sock"), "--log-level", "error", "--device", "null",
                "--config", directory.path("tonearmd.toml"), "--state-directory", directory.path("state"),
            ],
            log: directory.path("log"))
        return LibraryServer(name: "tonearmd", child: child, directory: directory, socket: directory.path("mpd.sock"))
    }

    func connect() throws -> MPDConnection {
        let start = monotonic()
        while true {
            if let connection = try? MPDConnection(path: socket) { return connection }
            guard monotonic() - start < 30 else { throw BenchError("\(name) did not start") }
            usleep(1000)
        }
    }

    func stop() {
        _ = child.terminate()
        directory.remove()
    }
}

/// A plain MPD client for long replies: it reads each reply through to its OK, keeping only the
/// line being read, so that a 28 MB listing costs the client one pass.
private final class MPDConnection {
    private let client: LineClient
    private var buffer = [UInt8](repeating: 0, count: 1 << 16)
    private var tail: [UInt8] = []

    init(path: String) throws {
        client = try LineClient(path: path)
        _ = try reply("")
    }

    /// Sends `command` (unless empty) and reads its reply; returns its `key: value` pairs when
    /// `keeping`, else only how many lines it had.
    @discardableResult
    func reply(_ command: String, keeping: Bool = false) throws -> (lines: Int, pairs: [(String, String)]) {
        if !command.isEmpty { try client.send(raw: Data((command + "\n").utf8)) }
        var lines = 0
        var pairs: [(String, String)] = []
        while true {
            let count = buffer.withUnsafeMutableBytes { read(client.fd, $0.baseAddress, $0.count) }
            guard count > 0 else { throw BenchError("the connection closed during \(command)") }
            var start = 0
            for index in 0..<count where buffer[index] == 0x0A {
                let line: [UInt8] = tail.isEmpty ? Array(buffer[start..<index]) : tail + buffer[start..<index]
                tail.removeAll(keepingCapacity: true)
                start = index + 1
                lines += 1
                if line.starts(with: "OK".utf8), line.count == 2 || line.starts(with: "OK MPD".utf8) { return (lines, pairs) }
                if line.starts(with: "ACK ".utf8) { throw BenchError("\(command): \(String(decoding: line, as: UTF8.self))") }
                if keeping, let colon = line.firstIndex(of: 0x3A) {
                    pairs.append(
                        (
                            String(decoding: line[..<colon], as: UTF8.self),
                            String(decoding: line[(colon + 2)...], as: UTF8.self)
                        ))
                }
            }
            tail += buffer[start..<count]
        }
    }

    func value(_ command: String, _ key: String) throws -> String? {
        try reply(command, keeping: true).pairs.first { $0.0 == key }?.1
    }
}

extension Runner {
    // 12. The music library on a 100,000-track tree (scripts/make-bench-library.py), Debian's MPD
    // then tonearmd, each from an empty database with the page cache dropped: the scan, a rescan
    // of the unchanged tree, memory after it, the server's CPU and the client's round trip for
    // the queries phone and web clients send, `listallinfo` of everything, and adding 10,000
    // library songs to the queue.
    func library() throws {
        for tree in libraryTrees { try library(tree: tree) }
    }

    /// One tree, MPD's figures then tonearmd's, named by the tree's size ("library 20,000 songs: …").
    private func library(tree given: String) throws {
        // Both servers want an absolute music directory.
        let tree = URL(fileURLWithPath: given).standardizedFileURL.path
        guard FileManager.default.fileExists(atPath: tree + "/.complete") else {
            throw BenchError("no library tree at \(tree): run scripts/make-bench-library.py COUNT \(tree)")
        }
        var peer: [String: Double] = [:]
        if FileManager.default.isExecutableFile(atPath: "/usr/bin/mpd") {
            peer = try measureLibrary(try LibraryServer.mpd(tree: tree), tree: tree, peer: nil)
        } else {
            FileHandle.standardError.write(Data("no mpd binary: the MPD peer figures are left out (apt-get install mpd)\n".utf8))
        }
        _ = try measureLibrary(try LibraryServer.tonearm(daemon, tree: tree), tree: tree, peer: peer.isEmpty ? nil : peer)
    }

    /// The queries, named as in docs/performance.md; `artist` is one the tree has.
    private static func libraryQueries(artist: String) -> [(name: String, command: String)] {
        [
            ("find artist", "find artist \"\(artist)\""),
            ("search any", "search any \"night\""),
            ("search title (Unicode-folded)", "search title \"CAFÉ\""),
            ("find (expr) sort window 0:100", "find \"(genre == 'Jazz')\" sort Title window 0:100"),
            ("list album group albumartist", "list album group albumartist"),
            ("list artist", "list artist"),
            ("count genre", "count group genre"),
        ]
    }

    /// Measures one server; returns its figures by name (the peer's, for the budgets).
    private func measureLibrary(_ server: LibraryServer, tree: String, peer: [String: Double]?) throws -> [String: Double] {
        defer { server.stop() }
        var figures: [String: Double] = [:]
        let songs = try String(contentsOfFile: tree + "/.count", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        // "20,000": the figures' names say which tree.
        var size = songs
        for offset in stride(from: songs.count - 3, to: 0, by: -3) { size.insert(",", at: size.index(size.startIndex, offsetBy: offset)) }
        func add(_ figure: String, _ unit: String, _ values: [Double], ratioAtMost: Double? = nil) {
            let value = values.sorted()[values.count / 2]
            figures[figure] = value
            let budget = ratioAtMost.flatMap { ratio in peer?[figure].map { Budget.atMost(ratio * $0) } }
            report.add("\(server.name): library \(size) songs: \(figure)", unit, values, budget: budget)
        }

        // The scan from empty: from the process's start until the database holds every song.
        dropPageCache()
        let started = monotonic()
        let connection = try server.connect()
        if server.name.hasPrefix("peer") { try connection.reply("update") }
        try waitForScan(connection, songs: songs)
        add("scan from empty", "s", [monotonic() - started], ratioAtMost: 0.5)
        add("RSS after the scan", "MiB", [memory(pid: server.child.pid).rss], ratioAtMost: 0.75)

        // A rescan of the unchanged tree.
        dropPageCache()
        let rescanStarted = monotonic()
        try connection.reply("update")
        try waitForScan(connection, songs: songs)
        add("rescan, unchanged", "s", [monotonic() - rescanStarted], ratioAtMost: 0.5)

        // An artist to find, asked otherwise than by a query measured below (tonearmd keeps
        // replies until the database changes: each query's first ask is measured on its own).
        let artists = try connection.reply("list albumartist", keeping: true).pairs.map(\.1)
        for (name, command) in Self.libraryQueries(artist: artists[artists.count / 2]) {
            let first = try measureFirst(command, on: connection, pid: server.child.pid)
            add("\(name): server CPU, first ask", "ms", [first])
            let (cpu, roundTrips) = try measure(command, on: connection, pid: server.child.pid, repeats: 20)
            add("\(name): server CPU", "ms", [cpu], ratioAtMost: 0.1)
            add("\(name): round trip", "ms", roundTrips, ratioAtMost: 0.5)
        }
        let rssBefore = memory(pid: server.child.pid).rss
        let (cpu, roundTrips) = try measure("listallinfo", on: connection, pid: server.child.pid, repeats: 3)
        add("listallinfo: server CPU", "ms", [cpu], ratioAtMost: 0.5)
        add("listallinfo: round trip", "ms", roundTrips, ratioAtMost: 0.67)
        add("listallinfo: RSS growth", "MiB", [memory(pid: server.child.pid).rss - rssBefore])

        // 10,000 library songs added in one command list: the server's CPU, counting what the
        // add starts in the background, until it is quiet again.
        let uris = try connection.reply("listall", keeping: true).pairs.filter { $0.0 == "file" }.prefix(10_000).map(\.1)
        let list = "command_list_begin\n" + uris.map { "add \"\($0)\"" }.joined(separator: "\n") + "\ncommand_list_end"
        let before = ProcessSample(pid: server.child.pid).cpuNanoseconds
        try connection.reply(list)
        waitUntilQuiet(pid: server.child.pid)
        add(
            "add 10,000 songs: server CPU", "ms", [(ProcessSample(pid: server.child.pid).cpuNanoseconds - before) / 1e6],
            ratioAtMost: 2)
        return figures
    }

    /// The server's CPU per request (ms, all threads) and each round trip (ms), over `repeats`.
    /// The server's CPU for a query asked for the first time since the database last changed.
    private func measureFirst(_ command: String, on connection: MPDConnection, pid: pid_t) throws -> Double {
        let before = ProcessSample(pid: pid).cpuNanoseconds
        try connection.reply(command)
        return (ProcessSample(pid: pid).cpuNanoseconds - before) / 1e6
    }

    private func measure(_ command: String, on connection: MPDConnection, pid: pid_t, repeats: Int) throws -> (Double, [Double]) {
        try connection.reply(command)  // warm
        var roundTrips: [Double] = []
        let before = ProcessSample(pid: pid).cpuNanoseconds
        for _ in 0..<repeats {
            let start = monotonic()
            try connection.reply(command)
            roundTrips.append((monotonic() - start) * 1000)
        }
        return ((ProcessSample(pid: pid).cpuNanoseconds - before) / 1e6 / Double(repeats), roundTrips)
    }

    private func waitForScan(_ connection: MPDConnection, songs: String) throws {
        let deadline = monotonic() + 1800
        while monotonic() < deadline {
            if try connection.value("status", "updating_db") == nil, try connection.value("stats", "songs") == songs { return }
            usleep(10_000)
        }
        throw BenchError("the scan did not end within 30 minutes")
    }

    /// Drops the kernel's page cache (root only; otherwise the scans find a warm cache, said once).
    private func dropPageCache() {
        sync()
        guard let handle = FileHandle(forWritingAtPath: "/proc/sys/vm/drop_caches") else {
            FileHandle.standardError.write(Data("cannot drop the page cache (not root): the scans read a warm cache\n".utf8))
            return
        }
        handle.write(Data("3\n".utf8))
        try? handle.close()
    }
}
