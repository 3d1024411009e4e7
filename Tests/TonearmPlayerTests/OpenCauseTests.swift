import Testing

@testable import TonearmPlayer

/// `OpenCause`: how each reason to open an item opens it. One row per case; `name` names each
/// case, so a new case does not compile until it has a name, and fails here until it has a row.
@Suite("OpenCause: how an item is opened")
struct OpenCauseTests {
    struct Row {
        let cause: OpenCause
        let skipsFailures: Bool
        let play: Bool
        let reason: ItemReason
    }

    static let rows: [Row] = [
        Row(cause: .load(play: false), skipsFailures: false, play: false, reason: .user),
        Row(cause: .load(play: true), skipsFailures: false, play: true, reason: .user),
        Row(cause: .retry, skipsFailures: false, play: false, reason: .user),
        Row(cause: .jump(play: false), skipsFailures: true, play: false, reason: .user),
        Row(cause: .jump(play: true), skipsFailures: true, play: true, reason: .user),
        Row(cause: .goesOn(play: false), skipsFailures: true, play: false, reason: .end),
        Row(cause: .goesOn(play: true), skipsFailures: true, play: true, reason: .end),
    ]

    private static func name(_ cause: OpenCause) -> String {
        switch cause {
        case .load: "load"
        case .retry: "retry"
        case .jump: "jump"
        case .goesOn: "goesOn"
        }
    }

    @Test func everyCaseHasRows() {
        #expect(Set(Self.rows.map { Self.name($0.cause) }) == ["load", "retry", "jump", "goesOn"])
    }

    @Test(arguments: rows.indices)
    func eachCauseOpensAsItsRowSays(_ index: Int) {
        let row = Self.rows[index]
        #expect(row.cause.skipsFailures == row.skipsFailures, "\(row.cause)")
        #expect(row.cause.play == row.play, "\(row.cause)")
        #expect(row.cause.reason == row.reason, "\(row.cause)")
    }
}
