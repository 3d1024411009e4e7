import Foundation
import Testing
import TonearmMedia

@testable import TonearmEngine

/// What the engine's threads share stays one small record: each thread's own state lives in
/// its worker (`OutputState`, `DecoderState`), and what a thread tells the others is one report.
@Suite("The engine's shared record stays small")
struct EngineSharedRecordTests {
    @Test func theSharedRecordHoldsAtMostFifteenFields() {
        let control = EngineControl(configuration: OutputConfiguration(device: "null"), input: InputConfiguration())
        let fields = Mirror(reflecting: control).children.compactMap(\.label)
        // The mirror sees the record's fields (a check that counted nothing would pass).
        #expect(fields.contains("epoch") && fields.contains("pipe") && fields.contains("clock"))
        #expect(fields.count <= 15, "EngineControl's stored fields: \(fields.joined(separator: ", "))")
    }

    @Test func commandsGoToTheThreadTheyAreFor() {
        var commands = EngineCommands()
        commands.send(.setVolume(0.5))
        commands.send(.setCrossfade(3))
        commands.send(.setReplayGain(ReplayGainSettings()))
        var taken: [EngineCommand] = []
        commands.take(for: .output, into: &taken)
        #expect(taken.count == 2)
        #expect(commands.output.isEmpty && commands.decoder.count == 2)
        commands.take(for: .decoder, into: &taken)
        #expect(taken.count == 2)
        #expect(commands.decoder.isEmpty)
        // Taken in the order sent.
        guard case .setCrossfade(3) = taken[0], case .setReplayGain = taken[1] else {
            Issue.record("decoder commands out of order: \(taken)")
            return
        }
    }
}
