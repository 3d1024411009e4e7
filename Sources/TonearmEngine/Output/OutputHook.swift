import CLinux
import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// One run of `output.on_open` or `output.on_close`: a command run around the device's use (an
/// amplifier relay on a GPIO, a smart plug, a CEC command), and how it went.
package struct OutputHookRun: Sendable, Equatable {
    package enum Moment: String, Sendable {
        case onOpen = "on_open"
        case onClose = "on_close"
    }

    package enum Outcome: Sendable, Equatable {
        case exited(Int32)
        case signalled(Int32)
        /// It ran past `output.hook_timeout_ms` and was killed (with its process group).
        case timedOut
        /// An `on_close` still running (or not started yet) when the device was wanted again:
        /// stopped (with its process group), so that `on_open` and the music wait for one hook
        /// at most, not for two.
        case superseded
        case couldNotStart(String)
    }

    package let moment: Moment
    package let command: [String]
    package let outcome: Outcome
    package let seconds: Double

    package init(moment: Moment, command: [String], outcome: Outcome, seconds: Double) {
        self.moment = moment
        self.command = command
        self.outcome = outcome
        self.seconds = seconds
    }

    package var succeeded: Bool { outcome == .exited(0) }

    /// "on_open `relay on` exited 0 after 0.012 s"
    package var summary: String {
        let what =
            switch outcome {
            case .exited(let code): "exited \(code)"
            case .signalled(let signal): "was killed by signal \(signal)"
            case .timedOut: "timed out and was killed"
            case .superseded: "was stopped: the device was wanted again"
            case .couldNotStart(let reason): "could not start: \(reason)"
            }
        return "output.\(moment.rawValue) `\(command.joined(separator: " "))` \(what) after "
            + String(format: "%.3f s", seconds)
    }
}

/// Runs a hook command: no shell (argv[0] is looked up in PATH), stdin from /dev/null, stdout and
/// stderr the daemon's (the journal) and no other descriptor: every one from 3 up is closed in the
/// child, close-on-exec or not (NIO opens its sockets and its epoll without it), so a process the
/// hook leaves running holds none of the daemon's ports once it stops. Default signal handling and
/// an empty signal mask (the daemon's own are not inherited), in a process group of its own so a
/// timeout kills what it started too. Waits for the exit in poll(2) on a pidfd, up to `timeout`:
/// no polling.
enum OutputHookRunner {
    /// `stop`: when it fires, a hook not started yet is not started, and a running one is
    /// killed with its process group (`superseded`).
    static func run(
        _ moment: OutputHookRun.Moment, _ command: [String], timeout: Double,
        stop: HookStop? = nil
    ) -> OutputHookRun {
        let started = EngineLock.now()
        func done(_ outcome: OutputHookRun.Outcome) -> OutputHookRun {
            OutputHookRun(moment: moment, command: command, outcome: outcome, seconds: EngineLock.now() - started)
        }
        guard let program = command.first else { return done(.couldNotStart("empty command")) }
        if stop?.fired == true { return done(.superseded) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGCHLD, SIGUSR1, SIGUSR2] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP))
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        let closing = tonearm_spawn_close_from(&actions, 3)
        guard closing == 0 else {
            return done(.couldNotStart("cannot close the daemon's descriptors: \(String(cString: strerror(closing)))"))
        }
        let argv = command.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawnp(&pid, program, &actions, &attributes, argv, environ)
        guard spawned == 0 else { return done(.couldNotStart(String(cString: strerror(spawned)))) }

        let ended = waitForExit(pid, timeout: timeout, stop: stop)
        if ended != .exited {
            kill(-pid, SIGKILL)
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        if ended == .timedOut { return done(.timedOut) }
        if ended == .stopped { return done(.superseded) }
        let signal = status & 0x7f
        return done(signal == 0 ? .exited((status >> 8) & 0xff) : .signalled(signal))
    }

    private enum Ended { case exited, timedOut, stopped }

    /// How the wait for `pid` ended (it is not reaped here): it exited, `timeout` passed, or
    /// `stop` fired. On a kernel without pidfds the wait has no bound.
    private static func waitForExit(_ pid: pid_t, timeout: Double, stop: HookStop?) -> Ended {
        let pidfd = tonearm_pidfd_open(pid)
        guard pidfd >= 0 else { return .exited }
        defer { close(pidfd) }
        let deadline = EngineLock.now() + timeout
        while true {
            let left = deadline - EngineLock.now()
            if left <= 0 { return .timedOut }
            var entries = [
                pollfd(fd: pidfd, events: Int16(POLLIN), revents: 0),
                pollfd(fd: stop?.descriptor ?? -1, events: Int16(POLLIN), revents: 0),
            ]
            let ready = poll(&entries, 2, Int32(min(left * 1000, Double(Int32.max)).rounded(.up)))
            if ready > 0 { return entries[0].revents != 0 ? .exited : .stopped }
            if ready < 0 && errno != EINTR { return .exited }
        }
    }
}

/// A way to stop a hook from another thread: an eventfd the hook's wait polls beside its pidfd.
/// Fired once, never reset.
final class HookStop: Sendable {
    let descriptor: Int32

    init() { descriptor = eventfd(0, Int32(EFD_CLOEXEC | EFD_NONBLOCK)) }

    deinit { if descriptor >= 0 { close(descriptor) } }

    func fire() {
        guard descriptor >= 0 else { return }
        _ = eventfd_write(descriptor, 1)
    }

    var fired: Bool {
        guard descriptor >= 0 else { return false }
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, 0) > 0
    }
}
