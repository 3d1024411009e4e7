import CLinux
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A child started with posix_spawn, so that `wait4` can report exactly the CPU it used.
struct Child {
    let pid: pid_t

    /// Starts `path` with `arguments`; its stdout and stderr go to `log` (default /dev/null).
    static func spawn(_ path: String, _ arguments: [String], log: String = "/dev/null") throws -> Child {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, log, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // Nothing of the bench's own (its client sockets) goes to the daemon or MPD it measures.
        _ = tonearm_spawn_close_from(&actions, 3)
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        let environment =
            ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("TONEARM_") }
            .map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { environment.forEach { free($0) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, path, &actions, nil, argv, environment)
        guard result == 0 else { throw BenchError("cannot start \(path): \(String(cString: strerror(result)))") }
        return Child(pid: pid)
    }

    /// Waits for the exit; returns the CPU seconds (user + system) the child used.
    @discardableResult
    func wait() -> Double {
        var status: Int32 = 0
        var usage = rusage()
        _ = wait4(pid, &status, 0, &usage)
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    func terminate() -> Double {
        kill(pid, SIGTERM)
        return wait()
    }
}

/// What the kernel says about a running process, summed over its threads. Context switches are
/// kept per thread, so that a delta between two samples counts only threads it saw: a thread
/// that ends between them takes its count away, which would otherwise make the delta negative.
struct ProcessSample {
    var cpuNanoseconds: Double = 0
    var switchesByThread: [String: Double] = [:]
    /// On-CPU nanoseconds by thread name (threads of one name summed).
    var cpuByThreadName: [String: Double] = [:]
    var threads = 0

    /// Context switches since `earlier`: threads alive in both, plus threads that started since.
    func contextSwitches(since earlier: ProcessSample) -> Double {
        switchesByThread.reduce(0) { total, entry in total + entry.value - (earlier.switchesByThread[entry.key] ?? 0) }
    }

    init(pid: pid_t) {
        let taskDirectory = "/proc/\(pid)/task"
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: taskDirectory)) ?? []
        threads = tasks.count
        for task in tasks {
            if let schedstat = try? String(contentsOfFile: "\(taskDirectory)/\(task)/schedstat", encoding: .utf8),
                let onCPU = schedstat.split(separator: " ").first.flatMap({ Double($0) })
            {
                cpuNanoseconds += onCPU
                let name = (try? String(contentsOfFile: "\(taskDirectory)/\(task)/comm", encoding: .utf8)) ?? task
                cpuByThreadName[name.trimmingCharacters(in: .whitespacesAndNewlines), default: 0] += onCPU
            }
            if let status = try? String(contentsOfFile: "\(taskDirectory)/\(task)/status", encoding: .utf8) {
                for line in status.split(separator: "\n")
                where line.hasPrefix("voluntary_ctxt_switches:") || line.hasPrefix("nonvoluntary_ctxt_switches:") {
                    let count = line.split(separator: "\t").last.flatMap { Double($0.trimmingCharacters(in: .whitespaces)) } ?? 0
                    switchesByThread[task, default: 0] += count
                }
            }
        }
    }
}

/// Resident and private dirty memory, in MiB, from /proc/PID/smaps_rollup.
func memory(pid: pid_t) -> (rss: Double, privateDirty: Double) {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/smaps_rollup", encoding: .utf8) else { return (0, 0) }
    func field(_ name: String) -> Double {
        for line in text.split(separator: "\n") where line.hasPrefix(name + ":") {
            let kilobytes = line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first.flatMap { Double($0) } ?? 0
            return kilobytes / 1024
        }
        return 0
    }
    return (field("Rss"), field("Private_Dirty"))
}

func monotonic() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}

func sleep(seconds: Double) { usleep(useconds_t(seconds * 1e6)) }

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
