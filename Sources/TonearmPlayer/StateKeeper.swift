import Foundation
import Logging
import TonearmCore
import TonearmEngine
import TonearmSync

/// Keeps the state on disk, on a thread of its own ("tonearm-state"), never on the audio path's
/// threads, in two files it alone writes:
/// - the journal (`StateJournal`): each acknowledged change (queue edits, options, the current
///   item, volume, ReplayGain), appended and flushed before its command is answered. What
///   arrives while one append is being flushed goes in the next one, together (group commit).
/// - the snapshot (`StateFile`): the whole state, rewritten atomically on each transition, while
///   playing every `interval` (the position), when the journal has grown past `foldSize`, and
///   at shutdown. A durable snapshot holds everything the journal did, which is then emptied.
/// It sleeps on its condition otherwise: an idle or paused daemon makes it wake for nothing.
///
/// `@unchecked Sendable`: `dirty`, `journalPending`, `finishing`, `done` and `finishWaiters` are
/// read and written only with `condition` locked; `writer`, `lastWritten` and `lastError` only
/// on the keeper's thread; `transitionsTask` only by `start` and `playerWillShutDown`, which the
/// daemon calls in turn.
package final class StateKeeper: PlayerChangeObserver, @unchecked Sendable {
    private let player: Player
    private let file: StateFile
    private let interval: Double
    private let logger: Logger
    private let condition = NSCondition()
    private var dirty = true
    /// The player recorded changes the journal does not hold yet.
    private var journalPending = false
    private let writer: JournalWriter
    /// Past this many journal bytes, the keeper folds the journal into a snapshot. Room for a
    /// few whole-library adds (10,000 songs are a record of some 1.2 MB; folding one at once
    /// rewrote the whole queue beside it, twice the work), small enough that replaying it at
    /// start stays a fraction of a second.
    static let foldSize = 4 << 20
    private var finishing = false
    private var done = false
    private var finishWaiters: [CheckedContinuation<Void, Never>] = []
    /// The bytes last written (an array, not `Data`: LeakSanitizer cannot follow `Data`'s inline
    /// representation, and the keeper may still be alive as the process exits).
    private var lastWritten: [UInt8]?
    private var lastError: String?
    private var transitionsTask: Task<Void, Never>?

    package init(player: Player, file: StateFile, interval: Double, logger: Logger) {
        self.player = player
        self.file = file
        self.interval = max(interval, 0.1)
        self.logger = logger
        writer = JournalWriter(StateJournal(directory: file.directory))
    }

    /// Starts the thread and the watch on transitions; the player reports its other changes.
    package func start() {
        player.changeObserver = self
        player.changes.keep { [weak self] in self?.journalChanged() }
        let stream = player.transitions()
        transitionsTask = Task { [weak self] in
            for await _ in stream { self?.playerChanged() }
        }
        NamedThread.start("tonearm-state") { [self] in run() }
    }

    private func journalChanged() {
        condition.lock()
        journalPending = true
        condition.signal()
        condition.unlock()
    }

    package func playerChanged() {
        condition.lock()
        dirty = true
        condition.signal()
        condition.unlock()
    }

    /// Writes the state as it is now and stops the thread; returns once that is done (without
    /// blocking a thread of the caller's). The player calls it first thing in its shutdown, so
    /// the stop that follows is not saved.
    package func playerWillShutDown() async {
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
        // While playing, when the position is next due: a journal append in between does not
        // put it off (a steady run of commands would otherwise keep an old position on disk).
        var positionDue = Date(timeIntervalSinceNow: interval)
        while !finishing {
            if journalPending {
                journalPending = false
                condition.unlock()
                commit()
                condition.lock()
                continue
            }
            if dirty {
                dirty = false
                condition.unlock()
                save()
                condition.lock()
                positionDue = Date(timeIntervalSinceNow: interval)
                continue
            }
            condition.unlock()
            let playing = player.state == .playing
            condition.lock()
            if dirty || journalPending || finishing { continue }
            if playing {
                // While playing the position moves on: saved every `interval`.
                if !condition.wait(until: positionDue) { dirty = true }
            } else {
                condition.wait()
            }
        }
        condition.unlock()
        save()
        player.changes.release()
        condition.lock()
        done = true
        let waiters = finishWaiters
        finishWaiters = []
        condition.unlock()
        for waiter in waiters { waiter.resume() }
    }

    /// Appends the changes recorded since the last append, flushes them, and lets the replies
    /// waiting for them go. Should the journal fail, a snapshot holds them instead.
    private func commit() {
        let records = player.changes.takePending()
        guard let last = records.last?.sequence else { return }
        var bytes: [UInt8] = []
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        do {
            for (sequence, change) in records {
                bytes += try StateJournal.Record(sequence: sequence, change: change).encoded(with: encoder)
                bytes.append(UInt8(ascii: "\n"))
            }
            try writer.append(bytes)
            succeeded()
            player.changes.markDurable(through: last, .journal)
        } catch {
            failed("\(error)")
            // The snapshot holds every change so far; if it cannot be written either, the reply
            // goes anyway: the change is in force, and the log says the state is not saved.
            if !save() { player.changes.markDurable(through: last, .notSaved) }
        }
        if writer.size > Self.foldSize { save() }
    }

    /// Writes the whole state (if it differs from the last written); once it is durable, the
    /// journal it folds in is emptied. Returns whether the state is on disk.
    @discardableResult
    private func save() -> Bool {
        let state = player.savedState
        let data: Data
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            data = try encoder.encode(state)
        } catch {
            logger.error("cannot encode the state", metadata: ["error": "\(error)"])
            return false
        }
        let bytes = [UInt8](data)
        let sequence = state.journalSequence ?? 0
        if bytes != lastWritten {
            do throws(StateFile.WriteError) {
                try file.write(data)
                lastWritten = bytes
                succeeded()
            } catch {
                failed(error.description)
                return false
            }
        }
        player.changes.markDurable(through: sequence, .snapshot)
        writer.empty()
        player.snapshotWritten(through: sequence)
        return true
    }

    private func succeeded() {
        guard lastError != nil else { return }
        lastError = nil
        logger.notice("state saved again", metadata: ["file": "\(file.path)"])
    }

    /// A full disk or a read-only directory: said once until saving works again (the journal
    /// and the snapshot fail together, each in its words), and tried again at the next change.
    private func failed(_ description: String) {
        guard lastError == nil else { return }
        lastError = description
        logger.warning("cannot save the state; playback goes on", metadata: ["error": "\(description)"])
    }
}
