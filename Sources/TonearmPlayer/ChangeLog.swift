import Synchronization
import TonearmSync

/// The player's acknowledged changes on their way to disk (see `StateKeeper`). The player
/// numbers each change as it makes it, under its own lock, so the numbers follow the order of
/// the changes; the keeper takes what is pending, makes it durable (one journal append and one
/// `fdatasync` for all that arrived together: group commit), and says up to which number it is.
/// The front-ends hold a reply to a command that changed something until its number is durable.
///
/// With no keeper (no state directory, or one that cannot be written) every change counts as
/// durable at once: nothing would ever make it more so.
package final class ChangeLog: Sendable {
    struct State {
        /// The number of the latest change.
        var recorded = 0
        /// Every change up to this number is on disk (or will never be: see `release`).
        var durable = 0
        var kept = false
        /// A change was given up unsaved (the journal and the snapshot both failed) since the
        /// last snapshot written: what is durable now is in force, but not on disk.
        var givenUp = false
        var pending: [(sequence: Int, change: StateChange)] = []
        var waiters: [(sequence: Int, then: @Sendable () -> Void)] = []
        /// Wakes the keeper (called without this lock held).
        var wake: (@Sendable () -> Void)?
    }

    private let state = Locked(State())
    /// `State.recorded`, readable without the lock: every request line reads it twice (the
    /// request path compares it before and after serving), so it must cost a load, not a lock.
    /// Stored under the lock, after `recorded` changes.
    private let latest = Atomic<Int>(0)

    package init() {}

    /// The number of the latest change.
    package var recorded: Int { latest.load(ordering: .acquiring) }

    /// Notes a change the player just made. Called with the player lock held, so that the
    /// changes are numbered in the order they were made.
    func record(_ change: StateChange) {
        let wake: (@Sendable () -> Void)? = state.withLock { s in
            s.recorded += 1
            latest.store(s.recorded, ordering: .releasing)
            guard s.kept else {
                s.durable = s.recorded
                return nil
            }
            s.pending.append((s.recorded, change))
            return s.wake
        }
        wake?()
    }

    /// Runs `then` once every change up to `sequence` is durable: at once (on the caller's
    /// thread) if it is already, else on the keeper's thread.
    package func whenDurable(_ sequence: Int, _ then: @escaping @Sendable () -> Void) {
        let now = state.withLock { s in
            if s.durable >= sequence { return true }
            s.waiters.append((sequence, then))
            return false
        }
        if now { then() }
    }

    /// Returns once every change up to `sequence` is durable: true when it is on disk, false
    /// when it is only in force (saving failed, or there is no keeper to save it).
    @discardableResult
    package func durable(_ sequence: Int) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            whenDurable(sequence) { [state] in continuation.resume(returning: state.withLock { $0.kept && !$0.givenUp }) }
        }
    }

    /// How the keeper made changes durable.
    enum Written {
        /// Appended to the journal.
        case journal
        /// In a snapshot of the whole state: every change so far is on disk.
        case snapshot
        /// Not at all: the journal and the snapshot failed. They are in force only.
        case notSaved
    }

    // MARK: The keeper's side

    /// A keeper writes the changes from now on.
    func keep(wake: @escaping @Sendable () -> Void) {
        state.withLock { s in
            s.durable = s.recorded
            s.kept = true
            s.givenUp = false
            s.wake = wake
        }
    }

    /// Numbering goes on from `sequence` (the daemon restored a state that far).
    func start(at sequence: Int) {
        state.withLock { s in
            guard s.recorded < sequence else { return }
            s.recorded = sequence
            latest.store(sequence, ordering: .releasing)
            s.durable = max(s.durable, sequence)
        }
    }

    /// The changes not yet written, in order.
    func takePending() -> [(sequence: Int, change: StateChange)] {
        state.withLock { s in
            let pending = s.pending
            s.pending.removeAll(keepingCapacity: true)
            return pending
        }
    }

    /// Every change up to `sequence` is durable (`written` says how): what waited for it goes
    /// on, and pending changes it covers need no writing.
    func markDurable(through sequence: Int, _ written: Written) {
        let ready: [@Sendable () -> Void] = state.withLock { s in
            switch written {
            case .journal: break
            case .snapshot: s.givenUp = false
            case .notSaved: s.givenUp = true
            }
            s.durable = max(s.durable, sequence)
            s.pending.removeAll { $0.sequence <= sequence }
            let durable = s.durable
            let ready = s.waiters.filter { $0.sequence <= durable }.map(\.then)
            s.waiters.removeAll { $0.sequence <= durable }
            return ready
        }
        for then in ready { then() }
    }

    /// The keeper stops (shutdown): nothing waits any more, and later changes count as durable at once.
    func release() {
        state.withLock { s in
            s.kept = false
            s.wake = nil
            s.pending.removeAll()
        }
        markDurable(through: state.withLock { $0.recorded }, .journal)
    }
}
