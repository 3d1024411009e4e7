import Testing

@testable import TonearmPlayer

/// `ChangeLog.durable` says whether a change is on disk or only in force: a change given up
/// unsaved (journal and snapshot failed) stays unsaved, for itself and what follows, until a
/// snapshot holds it.
@Suite("ChangeLog: durable and saved")
struct ChangeLogTests {
    private func log() -> ChangeLog {
        let log = ChangeLog()
        log.keep(wake: {})
        return log
    }

    @Test func aJournaledChangeIsSaved() async {
        let log = log()
        log.record(.volume(level: 10))
        log.markDurable(through: log.recorded, .journal)
        #expect(await log.durable(log.recorded))
    }

    @Test func aChangeGivenUpIsUnsavedUntilASnapshotHoldsIt() async {
        let log = log()
        log.record(.volume(level: 10))
        log.markDurable(through: log.recorded, .notSaved)
        #expect(await log.durable(log.recorded) == false)
        // A later change appended to the journal does not save the one given up before it.
        log.record(.volume(level: 20))
        log.markDurable(through: log.recorded, .journal)
        #expect(await log.durable(log.recorded) == false)
        log.markDurable(through: log.recorded, .snapshot)
        #expect(await log.durable(log.recorded))
    }

    @Test func withoutAKeeperNothingIsSaved() async {
        let log = ChangeLog()
        log.record(.volume(level: 10))
        #expect(await log.durable(log.recorded) == false, "in force at once, on disk never")
        let kept = self.log()
        kept.record(.volume(level: 10))
        kept.release()
        #expect(await kept.durable(kept.recorded) == false, "the keeper stopped before writing it")
    }
}
