import Foundation

/// What a process holds, read from /proc: open descriptors, threads and resident memory.
package struct ProcessResources: Sendable, CustomStringConvertible {
    package let fileDescriptors: Int
    /// What each descriptor points at (`readlink /proc/PID/fd/N`), for messages.
    package let descriptorTargets: [String]
    package let threads: Int
    package let residentKiB: Int
    /// Thread names (the kernel's 15-byte `comm`), one entry per thread.
    package let threadNames: [String]

    package init(pid: Int32) throws {
        let descriptors = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")
        // A descriptor closed between the listing and the read of its target is closed: skip it
        // (it used to count, as "N→?", and made a transient descriptor look like a leak).
        descriptorTargets = descriptors.sorted { (Int($0) ?? 0) < (Int($1) ?? 0) }.compactMap { fd in
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(fd)")).map { "\(fd)→\($0)" }
        }
        fileDescriptors = descriptorTargets.count
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        func field(_ name: String) -> Int {
            guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(name + ":") }) else { return -1 }
            return Int(line.split(whereSeparator: { $0 == " " || $0 == "\t" })[1]) ?? -1
        }
        threads = field("Threads")
        residentKiB = field("VmRSS")
        // A thread that leaves between the listing and the read of its `comm` is gone: skip it
        // (it used to count as a thread named "").
        threadNames = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task").compactMap { task in
            (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/comm", encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }
    }

    /// User plus system CPU time the process has used so far, in seconds (/proc/PID/stat).
    package static func cpuSeconds(pid: Int32) throws -> Double {
        let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        // Fields after the command name, which is in parentheses and may hold spaces.
        guard let close = stat.lastIndex(of: ")") else { return 0 }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
        let ticks = (Double(fields[11]) ?? 0) + (Double(fields[12]) ?? 0)
        return ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    package var description: String { "\(fileDescriptors) fds, \(threads) threads, \(residentKiB) KiB resident" }
}

/// Runs a tool to its end; returns its exit status and what it printed (stdout and stderr).
package func runTool(_ path: String, _ arguments: [String], environment: [String: String]? = nil) throws -> (status: Int32, output: String)
{
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    if let environment { process.environment = environment }
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: data, as: UTF8.self))
}

/// Runs a tool and waits at most `timeout` seconds for it (then kills it by its pid); returns its
/// exit status (nil when it was killed) and what it wrote to stdout and stderr.
package func runTool(
    _ path: String, _ arguments: [String], environment: [String: String]? = nil,
    timeout: Double
) throws -> (status: Int32?, output: String) {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let outputPath = directory.path("output")
    _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
    let output = try FileHandle(forWritingTo: URL(fileURLWithPath: outputPath))
    defer { try? output.close() }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    if let environment { process.environment = environment }
    process.standardOutput = output
    process.standardError = output
    try process.run()
    let deadline = Date().addingTimeInterval(timeout)
    while process.isRunning && Date() < deadline { usleep(5_000) }
    var killed = false
    if process.isRunning {
        kill(process.processIdentifier, SIGKILL)
        killed = true
    }
    process.waitUntilExit()
    return (killed ? nil : process.terminationStatus, String(decoding: readWholeFile(outputPath), as: UTF8.self))
}

/// A file's bytes, read with POSIX calls: Foundation's readers leak their buffer on an empty file,
/// which LeakSanitizer reports.
package func readWholeFile(_ path: String) -> [UInt8] {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return [] }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard count > 0 else { break }
        bytes += chunk[0..<count]
    }
    return bytes
}

/// A capture's bytes once it stops growing (two reads 50 ms apart agree; at most 5 s): what a
/// device wrote, read after the writer is done.
package func settledFile(_ path: String) -> [UInt8] {
    var captured: [UInt8] = []
    for _ in 0..<100 {
        let now = readWholeFile(path)
        if now.count == captured.count && !now.isEmpty { break }
        captured = now
        usleep(50_000)
    }
    return captured
}
