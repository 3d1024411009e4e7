import Foundation
import Testing

@testable import TonearmEngine

/// `output.on_open`/`on_close` commands: run without a shell, their exit told apart, a hanging
/// one killed at its timeout with what it started.
@Suite("Output hooks run, report and time out")
struct OutputHookTests {
    @Test func exitStatusIsReported() {
        #expect(OutputHookRunner.run(.onOpen, ["/bin/true"], timeout: 5).outcome == .exited(0))
        #expect(OutputHookRunner.run(.onOpen, ["/bin/sh", "-c", "exit 7"], timeout: 5).outcome == .exited(7))
        #expect(OutputHookRunner.run(.onClose, ["/bin/sh", "-c", "kill -9 $$"], timeout: 5).outcome == .signalled(9))
    }

    @Test func aProgramIsFoundInPathAndArgumentsAreNotSplit() {
        // One argument with a space: a shell would have split it.
        let run = OutputHookRunner.run(.onOpen, ["sh", "-c", "test \"$0\" = 'a b'", "a b"], timeout: 5)
        #expect(run.outcome == .exited(0), "\(run.summary)")
    }

    @Test func aMissingProgramCannotStart() {
        let run = OutputHookRunner.run(.onOpen, ["/nonexistent/amp", "on"], timeout: 5)
        #expect(run.outcome == .couldNotStart("No such file or directory"))
        #expect(
            run.summary == "output.on_open `/nonexistent/amp on` could not start: No such file or directory after "
                + String(format: "%.3f s", run.seconds))
    }

    /// A hanging hook and the child it started are both killed at the timeout.
    @Test func aHangingHookIsKilledWithItsChildren() throws {
        let marker = FileManager.default.temporaryDirectory.appendingPathComponent("hook-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
            .path
        defer { try? FileManager.default.removeItem(atPath: marker) }
        let started = Date()
        let run = OutputHookRunner.run(.onClose, ["/bin/sh", "-c", "(sleep 1; touch '\(marker)') & sleep 30"], timeout: 0.3)
        #expect(run.outcome == .timedOut)
        #expect(Date().timeIntervalSince(started) < 5, "killed, not waited for")
        usleep(1_500_000)
        #expect(!FileManager.default.fileExists(atPath: marker), "its child was killed too")
    }

    /// A hook (and whatever it leaves running) holds none of the daemon's descriptors: NIO opens
    /// its sockets and epoll without close-on-exec, and a left-over child holding the listening
    /// sockets made the next start fail with "Address already in use".
    @Test func aHookInheritsOnlyTheStandardDescriptors() throws {
        let leaky = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)  // no close-on-exec, as NIO's
        try #require(leaky >= 0)
        defer { close(leaky) }
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("hook-fds-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
            .path
        defer { try? FileManager.default.removeItem(atPath: out) }
        // `exec`: the shell keeps nothing of its own; ls's one other descriptor is the directory it reads (3).
        let run = OutputHookRunner.run(.onOpen, ["/bin/sh", "-c", "exec ls /proc/self/fd > \"$0\"", out], timeout: 5)
        #expect(run.outcome == .exited(0), "\(run.summary)")
        #expect(try String(contentsOfFile: out, encoding: .utf8).split(separator: "\n") == ["0", "1", "2", "3"])
    }

    /// A hook stopped from another thread (an `on_close` when the device is wanted again) is
    /// killed with what it started at once, not at its timeout; one stopped before it started
    /// never starts.
    @Test func aStoppedHookEndsAtOnceWithItsChildren() throws {
        let marker = FileManager.default.temporaryDirectory.appendingPathComponent(
            "hook-stop-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        ).path
        defer { try? FileManager.default.removeItem(atPath: marker) }
        let stop = HookStop()
        // Its own thread, not a shared queue: a loaded machine (a sanitizer's run) must not delay it.
        Thread.detachNewThread {
            usleep(300_000)
            stop.fire()
        }
        let started = Date()
        let run = OutputHookRunner.run(.onClose, ["/bin/sh", "-c", "(sleep 3; touch '\(marker)') & sleep 30"], timeout: 20, stop: stop)
        let took = Date().timeIntervalSince(started)
        #expect(run.outcome == .superseded, "\(run.summary)")
        #expect(took < 2.5, "stopped, not waited for: \(took) s")
        usleep(UInt32(max(0, 3.5 - took) * 1_000_000))
        #expect(!FileManager.default.fileExists(atPath: marker), "its child was killed too")
        let never = OutputHookRunner.run(.onClose, ["/bin/sh", "-c", "touch '\(marker).never'"], timeout: 5, stop: stop)
        #expect(never.outcome == .superseded && !FileManager.default.fileExists(atPath: marker + ".never"), "not started once stopped")
    }
}
