import Testing
import TonearmSync

@Suite("RateBudget: at most so many a window", .timeLimit(.minutes(1)))
struct RateBudgetTests {
    @Test func admitsTheLimitThenSaysOnceAndResetsWithTheWindow() {
        var budget = RateBudget(limit: 3, window: 10)
        let verdicts = (0..<5).map { budget.admit(at: 100 + Double($0)) }
        #expect(verdicts == [.admitted, .admitted, .admitted, .firstLeftOut, .leftOut])
        #expect(budget.admit(at: 109.9) == .leftOut, "still the same window")
        #expect(budget.admit(at: 110) == .admitted, "a new window starts at its first event")
        #expect(budget.admit(at: 111) == .admitted)
    }
}
