import Foundation
import TonearmMedia
import TonearmSync

/// One device open carried out on the opener thread (`tonearm-open`, one for the engine's life).
/// A device open can block for good (a `file:` device on a FIFO nobody reads, a network sink
/// that does not answer, a wedged driver), and the output thread must stay free to take later
/// loads, stops and shutdown. So the output thread waits for the opener at most
/// `output.open_timeout_ms`; past that the open is *abandoned*: the opener keeps the handle it
/// may still get and closes it itself. No other open is asked while one is stuck, so one
/// opener thread is enough.
///
/// `@unchecked Sendable`: both fields are read and written only with the engine lock held. The
/// handle inside `result` crosses from the opener thread to the output thread once, through
/// that lock; an abandoned open's handle never leaves the opener thread.
final class DeviceOpenAttempt: @unchecked Sendable {
    /// Set by the opener thread when the open returned (engine lock held).
    var result: Result<any OutputDevice, EngineFailure>?
    /// Set by the output thread when it stopped waiting (engine lock held).
    var abandoned = false
    /// Set by the opener thread once the opening hook (if any) has run, before the open itself
    /// (engine lock held): a shutdown waits for that, never for an open that may not return.
    var hookDone = false
}

/// The opener thread and the open stuck on it, if any: the output worker's, for the engine's
/// life. The thread ends once the worker and every job queued on it have let go of it.
///
/// `@unchecked Sendable`: `stuck` is read and written only with the engine lock held (set by the
/// output thread, cleared by the opener thread once a stuck open returns).
final class DeviceOpener: @unchecked Sendable {
    let thread = JobThread(name: "tonearm-open")
    /// A device open that timed out and has not returned yet (see `DeviceOpenAttempt`).
    var stuck: DeviceOpenAttempt?

    deinit { thread.finish() }
}

extension OutputWorker {
    var openTimeout: Double { Double(max(configuration.openTimeoutMilliseconds, 100)) / 1000 }
    var hookTimeout: Double { Double(max(configuration.hookTimeoutMilliseconds, 10)) / 1000 }

    /// Runs a hook and posts how it went. Any thread but the output thread (it may take up to
    /// `hookTimeout`); lock not held.
    func runHook(_ moment: OutputHookRun.Moment, _ command: [String], stop: HookStop? = nil) {
        let run = OutputHookRunner.run(moment, command, timeout: hookTimeout, stop: stop)
        shared.lock.withLock { shared.post(.outputHookRan(itemID: shared.heardItemID ?? 0, run)) }
    }

    /// At shutdown: waits until the hooks queued on the opener thread have run (a closing hook of
    /// a release a moment before), so none is left running, orphaned, once the daemon exits. A
    /// hook is killed at its timeout; an open stuck for good is not waited for past that.
    /// Output thread, lock held (released while waiting).
    func finishQueuedHooks(_ state: OutputState) {
        shared.assertOn(.output)
        // No hooks, nothing to wait for.
        guard !(configuration.onOpen.isEmpty && configuration.onClose.isEmpty) else { return }
        if let stuck = opener.stuck {
            // An open stuck for good would hold the wait to its end: only the hooks queued before
            // it (a closing one, then its opening one) are waited for, so that `on_close` comes
            // after them.
            let deadline = EngineLock.now() + 2 * hookTimeout + 1
            while !stuck.hookDone, EngineLock.now() < deadline { shared.lock.waitOutput(untilMonotonic: deadline) }
            return
        }
        let done = DispatchSemaphore(value: 0)
        opener.thread.async { done.signal() }
        shared.lock.unlock()
        _ = done.wait(timeout: .now() + hookTimeout + 1)
        shared.lock.lock()
    }

    /// The device was released: `output.on_close` runs on the opener thread, after the close
    /// and before any later open's `on_open` (one thread, in order). An open asked while it has
    /// not ended stops it (`closeHookStop`): the music then waits for `on_open` alone, never for
    /// two hooks' timeouts. Output thread, lock held.
    func releaseHooks(_ state: inout OutputState) {
        shared.assertOn(.output)
        guard state.hooksOpened else { return }
        state.hooksOpened = false
        let command = configuration.onClose
        guard !command.isEmpty else { return }
        let stop = HookStop()
        state.closeHookStop = stop
        opener.thread.async { [self] in runHook(.onClose, command, stop: stop) }
    }

    /// Opens the device for `requested` on the opener thread and waits for it, at most the open
    /// timeout, and no longer once the engine shuts down. Output thread, lock held (released
    /// while waiting). While an abandoned open has not returned, no other is started: the device
    /// is known not to answer, and threads must not pile up behind it.
    func openDevice(_ requested: PCMFormat, _ state: inout OutputState) -> Result<any OutputDevice, EngineFailure> {
        let device = configuration.device
        if opener.stuck != nil {
            return .failure(
                EngineFailure(
                    .deviceUnavailable,
                    "audio device '\(device)' did not answer an open within "
                        + "\(configuration.openTimeoutMilliseconds) ms and still has not"))
        }
        let attempt = DeviceOpenAttempt()
        let bufferMilliseconds = configuration.bufferMilliseconds
        let sink = configuration.sink
        // The first open after a release (or ever) wakes what the device feeds first.
        let openHook = state.hooksOpened ? [] : configuration.onOpen
        state.hooksOpened = true
        // A closing hook still under way is moot now: stopped, so that the open waits for its own hook only.
        state.closeHookStop?.fire()
        state.closeHookStop = nil
        opener.thread.async { [self] in
            if !openHook.isEmpty { runHook(.onOpen, openHook) }
            shared.lock.withLock {
                attempt.hookDone = true
                shared.lock.wakeOutput()
            }
            let result: Result<any OutputDevice, EngineFailure>
            do throws(EngineFailure) {
                switch sink {
                case .alsa:
                    result = .success(
                        try AlsaOutput.open(
                            device: device, requested: requested,
                            bufferMilliseconds: bufferMilliseconds))
                case .snapcast(let host, let port, let format):
                    result = .success(try SnapcastOutput.open(host: host, port: port, format: format))
                }
            } catch {
                result = .failure(error)
            }
            shared.lock.lock()
            guard attempt.abandoned else {
                attempt.result = result
                shared.lock.wakeOutput()
                shared.lock.unlock()
                return
            }
            if opener.stuck === attempt { opener.stuck = nil }
            shared.lock.unlock()
            // Nobody waits for this handle any more: it is closed here, where it was opened.
            if case .success(let output) = result { output.close() }
        }
        // The opener first ends a closing hook queued before (stopped above, at once), then
        // runs the opening one, which may take up to the hook timeout.
        let hooks = configuration.onOpen.isEmpty && configuration.onClose.isEmpty ? 0 : hookTimeout + 1
        let deadline = EngineLock.now() + openTimeout + hooks
        while attempt.result == nil, !shared.play.shuttingDown, EngineLock.now() < deadline {
            shared.lock.waitOutput(untilMonotonic: deadline)
        }
        if let result = attempt.result { return result }
        attempt.abandoned = true
        opener.stuck = attempt
        return .failure(
            EngineFailure(
                .deviceUnavailable,
                "audio device '\(device)' did not answer an open within "
                    + "\(configuration.openTimeoutMilliseconds) ms"))
    }
}
