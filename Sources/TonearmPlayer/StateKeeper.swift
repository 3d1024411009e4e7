import Foundation
import Logging
import TonearmCore
import TonearmEngine
import TonearmSync

/// Keeps the state file up to date, on a thread of its own ("tonearm-state"), never on the
/// audio path's threads: after every change (queue, current item, transition, volume, ReplayGain)
/// and, while playing, the position every `interval`. It sleeps on its condition otherwise: an
/// idle or paused daemon makes it wake for nothing. Writes only what differs from the last write.
///
/// `@unchecked Sendable`: `dirty`, `finishing`, `done` and `finishWaiters` are read and written
/// only with `condition` locked; `lastWritten` and `lastError` only on the keeper's thread;
/// `transitionsTask` only by `start` and `playerWillShutDown`, which the daemon calls in turn.
public final class StateKeeper: PlayerChangeObserver, @unchecked Sendable {
    private let player: Player
    private let file: StateFile
    private let interval: Double
    private let logger: Logger
    private let condition = NSCondition()
    private var dirty = true
    private var finishing = false
    private var done = false
    private var finishWaiters: [CheckedContinuation<Void, Never>] = []
    /// The bytes last written (an array, not `Data`: LeakSanitizer cannot follow `Data`'s inline
    /// representation, and the keeper may still be alive as the process exits).
    private var lastWritten: [UInt8]?
    private var lastError: String?
    private var transitionsTask: Task<Void, Never>?

    public init(player: Player, file: StateFile, interval: Double, logger: Logger) {
        self.player = player
        self.file = file
        self.interval = max(interval, 0.1)
        self.logger = logger
    }

    /// Starts the thread and the watch on transitions; the player reports its other changes.
    public func start() {
        player.changeObserver = self
        let stream = player.transitions()
        transitionsTask = Task { [weak self] in
            for await _ in stream { self?.playerChanged() }
        }
        NamedThread.start("tonearm-state") { [self] in run() }
    }

    public func playerChanged() {
        condition.lock()
        dirty = true
        condition.signal()
        condition.unlock()
    }

    /// Writes the state as it is now and stops the thread; returns once that is done (without
    /// blocking a thread of the caller's). The player calls it first thing in its shutdown, so
    /// the stop that follows is not saved.
    public func playerWillShutDown() async {
        transitionsTask?.cancel()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            condition.lock()
            defer { condition.unlock() }
            if done {
                continuation.resume()
                return
            }
            finishWaiters.append(continuation)
            finishing = true
            condition.signal()
        }
    }

    private func run() {
        condition.lock()
        while !finishing {
            if dirty {
                dirty = false
                condition.unlock()
                save()
                condition.lock()
                continue
            }
            condition.unlock()
            let playing = player.state == .playing
            condition.lock()
            if dirty || finishing { continue }
            if playing {
                // While playing the position moves on: saved every `interval`.
                if !condition.wait(until: Date(timeIntervalSinceNow: interval)) { dirty = true }
            } else {
                condition.wait()
            }
        }
        condition.unlock()
        save()
        condition.lock()
        done = true
        let waiters = finishWaiters
        finishWaiters = []
        condition.unlock()
        for waiter in waiters { waiter.resume() }
    }

    private func save() {
        let data: Data
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            data = try encoder.encode(player.savedState)
        } catch {
            logger.error("cannot encode the state", metadata: ["error": "\(error)"])
            return
        }
        let bytes = [UInt8](data)
        guard bytes != lastWritten else { return }
        do throws(StateFile.WriteError) {
            try file.write(data)
            lastWritten = bytes
            if lastError != nil {
                lastError = nil
                logger.notice("state saved again", metadata: ["file": "\(file.path)"])
            }
        } catch {
            // A full disk or a read-only directory: said once per kind of failure, and tried again
            // at the next change.
            if lastError != error.description {
                lastError = error.description
                logger.warning("cannot save the state; playback goes on", metadata: ["error": "\(error.description)"])
            }
        }
    }
}
