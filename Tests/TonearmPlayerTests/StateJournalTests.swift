import Foundation
import Testing
import TonearmCore
import TonearmEngine
import TonearmMedia
import TonearmTestSupport

@testable import TonearmPlayer

/// `StateJournal.replay`: the changes after the snapshot, in order; a torn last line dropped;
/// damage stops the replay there and sets the journal aside.
@Suite("StateJournal: replay")
struct StateJournalTests {
    private static let url = URL(fileURLWithPath: "/music/a.flac")

    private func emptyState() -> SavedPlayerState {
        SavedPlayerState(queue: PlayQueue(), playback: .stopped, position: 0, volume: 100, replayGain: ReplayGainSettings())
    }

    private func line(_ sequence: Int, _ change: String) -> String {
        #"{"sequence":\#(sequence),"change":\#(change)}"# + "\n"
    }

    private let add = #"{"queue":{"edit":{"add":{"entries":[{"url":"file:///music/a.flac"}]}}}}"#

    private func journal(_ text: String) throws -> (StateJournal, TemporaryDirectory) {
        let dir = try TemporaryDirectory()
        try text.write(toFile: dir.path("state.journal"), atomically: false, encoding: .utf8)
        return (StateJournal(directory: dir.url.path), dir)
    }

    @Test func changesAfterTheSnapshotAreAppliedInOrder() throws {
        let (journal, dir) = try journal(
            line(1, add) + line(2, add) + line(3, #"{"volume":{"level":40}}"#)
                + line(4, #"{"replayGain":{"mode":"album","preampDB":-2.5}}"#))
        defer { dir.remove() }
        var state = emptyState()
        try state.apply(.queue(edit: .add(entries: [QueueEdit.Entry(url: Self.url, title: nil)], at: nil)))
        state.journalSequence = 1
        let replay = journal.replay(onto: &state)
        #expect(replay == StateJournal.Replay(applied: 3))
        #expect(state.queue.items.map(\.id) == [0, 1], "change 1 is the snapshot's already")
        #expect(state.volume == 40)
        #expect(state.replayGain == ReplayGainSettings(mode: .album, preampDB: -2.5))
        #expect(state.journalSequence == 4)
    }

    /// A gapless join journaled after the last snapshot (kill -9 soon after it): the snapshot's
    /// position is the old item's; the new one resumes at its start, never 8.5 s into it.
    @Test func aJournaledJoinStartsTheNewItemAtItsStart() throws {
        var state = emptyState()
        let entry = QueueEdit.Entry(url: Self.url, title: nil)
        try state.apply(.queue(edit: .add(entries: [entry, entry, entry], at: nil)))
        try state.apply(.queue(edit: .setCurrent(id: 1)))
        state.position = 9.02
        state.playback = .playing
        state.journalSequence = 2
        let (journal, dir) = try journal(line(3, #"{"queue":{"edit":{"advance":{"from":1,"to":2}}}}"#))
        defer { dir.remove() }
        #expect(journal.replay(onto: &state).applied == 1)
        #expect(state.queue.currentID == 2)
        #expect(state.position == 0, "9.02 s is item 1's place, not item 2's")
    }

    /// A snapshot taken when the new item already played holds its own position: a journaled
    /// join that changes nothing keeps it.
    @Test func aJoinTheSnapshotHoldsAlreadyKeepsItsPosition() throws {
        var state = emptyState()
        let entry = QueueEdit.Entry(url: Self.url, title: nil)
        try state.apply(.queue(edit: .add(entries: [entry, entry, entry], at: nil)))
        try state.apply(.queue(edit: .setCurrent(id: 2)))
        state.position = 0.4
        state.journalSequence = 2
        let (journal, dir) = try journal(line(3, #"{"queue":{"edit":{"advance":{"from":1,"to":2}}}}"#))
        defer { dir.remove() }
        #expect(journal.replay(onto: &state).applied == 1)
        #expect(state.queue.currentID == 2 && state.position == 0.4)
    }

    @Test func aLastLineCutShortIsDropped() throws {
        let (journal, dir) = try journal(line(1, add) + #"{"sequence":2,"chan"#)
        defer { dir.remove() }
        var state = emptyState()
        let replay = journal.replay(onto: &state)
        #expect(replay == StateJournal.Replay(applied: 1, droppedTornLine: true))
        #expect(FileManager.default.fileExists(atPath: journal.path), "not set aside")
    }

    @Test(arguments: [
        ("garbage", "line 2 is not a change"),
        (#"{"sequence":3,"change":{"volume":{"level":1}}}"#, "change 2 is missing"),
        (#"{"sequence":2,"change":{"queue":{"edit":{"remove":{"ids":[7]}}}}}"#, "change 2 does not apply"),
        (#"{"sequence":2,"change":{"volume":{"level":101}}}"#, "change 2 does not apply"),
    ])
    func damageStopsTheReplayAndSetsTheJournalAside(_ bad: String, _ problem: String) throws {
        let (journal, dir) = try journal(line(1, add) + bad + "\n" + line(3, add))
        defer { dir.remove() }
        var state = emptyState()
        let replay = journal.replay(onto: &state)
        #expect(replay.applied == 1)
        #expect(replay.problem?.hasPrefix(problem) == true, "\(replay)")
        #expect(state.queue.items.count == 1)
        #expect(state.journalSequence == 1)
        let kept = try #require(replay.keptAs)
        #expect(kept.hasPrefix(journal.path + ".bad-"))
        #expect(FileManager.default.fileExists(atPath: kept))
        #expect(!FileManager.default.fileExists(atPath: journal.path))
    }

    @Test func noJournalIsNothingToReplay() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var state = emptyState()
        #expect(StateJournal(directory: dir.url.path).replay(onto: &state) == StateJournal.Replay())
        #expect(state.journalSequence == nil, "left as it was")
    }
}

/// Durations the queue's tags gave, kept in the snapshot: shown after a restart until the
/// files are read again (they showed `null` before).
@Suite("Saved durations")
struct SavedDurationTests {
    @Test func durationsSurviveTheStateFile() throws {
        var state = SavedPlayerState(queue: PlayQueue(), playback: .stopped, position: 0, volume: 100, replayGain: ReplayGainSettings())
        state.durations = [0: 10.5, 7: 3]
        let data = try JSONEncoder().encode(state)
        #expect(String(decoding: data, as: UTF8.self).contains(#""durations":{"#), "an object keyed by id")
        #expect(try JSONDecoder().decode(SavedPlayerState.self, from: data).durations == [0: 10.5, 7: 3])
        state.durations = nil
        #expect(
            try JSONDecoder().decode(SavedPlayerState.self, from: JSONEncoder().encode(state)).durations == nil,
            "a file without them still reads")
    }

    @Test func keptDurationsStandUntilTheTagsAreRead() {
        let reader = TagReader()
        let a = URL(fileURLWithPath: "/music/a.flac")
        let b = URL(fileURLWithPath: "/music/b.flac")
        reader.keep(durations: [a: 3])
        #expect(reader.duration(for: a) == 3 && reader.duration(for: b) == nil)
        #expect(reader.durations(for: [a, b, a]) == [3, nil, 3])
    }

    /// An add's record, written by hand, is byte for byte what `JSONEncoder` writes: every
    /// control character, quotes, slashes, backslashes, Unicode, file and network URLs, with and
    /// without a title or a position, none at all.
    @Test func anAddsRecordIsWhatJSONEncoderWrites() throws {
        let controls = String(decoding: (0..<0x20).map { UInt8($0) } + [0x7F], as: UTF8.self)
        let titles: [String?] = [nil, "", "Café \"x\" / \\ é 日本", controls, "a\u{301}"]
        let urls = [
            URL(fileURLWithPath: "/music/a b/Café \"x\"\n%.flac"), URL(string: "http://host:8000/s?x=1&y=%2F#f")!,
            URL(fileURLWithPath: "/"),
        ]
        var entries: [QueueEdit.Entry] = []
        for (index, title) in titles.enumerated() { entries.append(QueueEdit.Entry(url: urls[index % urls.count], title: title)) }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        for edit: QueueEdit in [.add(entries: entries, at: nil), .add(entries: entries, at: 0), .add(entries: [], at: 12)] {
            let record = StateJournal.Record(sequence: 41, change: .queue(edit: edit))
            let mine = try record.encoded(with: encoder)
            #expect(String(decoding: mine, as: UTF8.self) == String(decoding: try encoder.encode(record), as: UTF8.self))
            let decoded = try JSONDecoder().decode(StateJournal.Record.self, from: Data(mine))
            #expect(decoded.change == record.change && decoded.sequence == 41)
        }
    }
}
