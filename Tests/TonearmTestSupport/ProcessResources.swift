import Foundation

/// What a process holds, read from /proc: open descriptors, threads and resident memory.
public struct ProcessResources: Sendable, CustomStringConvertible {
    public let fileDescriptors: Int
    /// What each descriptor points at (`readlink /proc/PID/fd/N`), for messages.
    public let descriptorTargets: [String]
    public let threads: Int
    public let residentKiB: Int
    /// Thread names (the kernel's 15-byte `comm`), one entry per thread.
    public let threadNames: [String]

    public init(pid: Int32) throws {
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

    public var description: String { "\(fileDescriptors) fds, \(threads) threads, \(residentKiB) KiB resident" }
}
