import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Runs the real `tonearmd` binary as a child process on its own socket and temporary directory.
package final class DaemonProcess {
    package let process = Process()
    package let directory: TemporaryDirectory
    package let socketPath: String
    package let logPath: String

    /// The built tonearmd: $TONEARMD_PATH, else beside the test bundle, else .build/debug.
    package static func binary() -> String {
        if let path = ProcessInfo.processInfo.environment["TONEARMD_PATH"] { return path }
        let besideTests = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("tonearmd").path
        if FileManager.default.isExecutableFile(atPath: besideTests) { return besideTests }
        let root = Fixtures.directory.deletingLastPathComponent().deletingLastPathComponent()
        return root.appendingPathComponent(".build/debug/tonearmd").path
    }

    /// - Parameter arguments: extra flags, e.g. ["--device", "null", "--pace"].
    /// - Parameter user: a uid to run the daemon as (with `setpriv`, group the same number, no
    ///   other groups; the test must run as root). Its directory is given to that user.
    /// - Parameter launcher: a command that runs the daemon (its path and arguments follow), and
    ///   execs it so that the process stays the daemon's: e.g. a shell that sets a limit first.
    /// - Parameter webRemote: whether the daemon serves its web remote (as its config says);
    ///   by default it does not, or every daemon would ask for the default port at once.
    package init(
        arguments: [String] = [], environment: [String: String] = [:], user: Int? = nil,
        launcher: [String] = [], webRemote: Bool = false
    ) throws {
        let arguments = webRemote || arguments.contains("--http") ? arguments : arguments + ["--http", "off"]
        directory = try TemporaryDirectory()
        socketPath = directory.path("tonearm.sock")
        logPath = directory.path("tonearmd.log")
        if let user {
            guard chown(directory.url.path, uid_t(user), gid_t(user)) == 0 else {
                throw LineClient.Failure(
                    description: "cannot give \(directory.url.path) to uid \(user): \(String(cString: strerror(errno)))")
            }
            process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            process.arguments = ["--reuid=\(user)", "--regid=\(user)", "--clear-groups", Self.binary(), "--socket", socketPath] + arguments
        } else if let tool = launcher.first {
            process.executableURL = URL(fileURLWithPath: tool)
            process.arguments = launcher.dropFirst() + [Self.binary(), "--socket", socketPath] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: Self.binary())
            process.arguments = ["--socket", socketPath] + arguments
        }
        var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("TONEARM_") }
        // Each daemon keeps its state in its own directory unless a test shares one on purpose.
        env["STATE_DIRECTORY"] = directory.path("state")
        env.merge(environment) { $1 }
        process.environment = env
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        process.standardOutput = log
        process.standardError = log
        try process.run()
    }

    /// Waits until the socket accepts a connection.
    package func connect(timeout: Double = 10) throws -> LineClient {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let client = try? LineClient(path: socketPath) { return client }
            if !process.isRunning || Date() > deadline {
                throw LineClient.Failure(description: "tonearmd did not accept connections: \(log)")
            }
            usleep(5_000)
        }
    }

    package var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// Every thread's stack, from gdb when it is installed (for a test that found the daemon
    /// not answering: what each thread waits on tells a deadlock from a slow machine).
    package var threadStacks: String {
        let gdb = "/usr/bin/gdb"
        guard process.isRunning, FileManager.default.isExecutableFile(atPath: gdb) else { return "(no gdb: no stacks)" }
        let dump = Process()
        dump.executableURL = URL(fileURLWithPath: "/usr/bin/timeout")
        dump.arguments = ["30", gdb, "-p", "\(process.processIdentifier)", "-batch", "-nx", "-ex", "thread apply all bt 30"]
        let output = Pipe()
        dump.standardOutput = output
        dump.standardError = output
        guard (try? dump.run()) != nil else { return "(gdb did not start)" }
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        dump.waitUntilExit()
        return text
    }

    /// SIGTERM, then waits for the exit; returns the exit status.
    @discardableResult
    package func terminate(timeout: Double = 10) -> Int32 {
        if process.isRunning { kill(process.processIdentifier, SIGTERM) }
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        return process.terminationStatus
    }

    deinit {
        terminate()
        // The daemon's log goes away with its directory: a sanitizer's report in it fails the test here.
        for report in Sanitizer.reports(in: log) {
            Issue.record("tonearmd (\(Sanitizer.active ?? "no") sanitizer) reported:\n\(report)")
        }
        directory.remove()
    }
}

/// Polls a daemon's `status` until `predicate` holds (tests only).
package func waitForStatus(
    _ client: LineClient, timeout: Double = 10,
    _ predicate: ([String: Any]) -> Bool
) throws -> [String: Any] {
    let deadline = Date().addingTimeInterval(timeout)
    while true {
        let status = try client.call("status")
        if let result = status.result, predicate(result) { return result }
        if Date() > deadline { throw LineClient.Failure(description: "status never matched; last: \(status)") }
        usleep(10_000)
    }
}

/// Once paused, the status whose position has stopped: a pause that fades out takes effect
/// once its fade is heard (what the device holds later), and the position runs on until then.
package func waitForHeldPosition(_ client: LineClient, timeout: Double = 10) throws -> [String: Any] {
    var last: Double?
    var same = 0
    return try waitForStatus(client, timeout: timeout) { status in
        let position = status["position"] as? Double
        same = position != nil && position == last ? same + 1 : 0
        last = position
        if same < 5 { usleep(40_000) }
        return same >= 5
    }
}

extension Dictionary where Key == String, Value == Any {
    package var name: String? { (self["state"] as? [String: Any])?["state"] as? String }
}
