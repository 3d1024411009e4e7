import Foundation
import Logging
import Testing
import TonearmSync
import TonearmTestSupport

@testable import TonearmPlayer

/// `alarms.json` as the daemon finds it: a good file is kept; one with a value the clock would
/// trap on (a moment past 2262, `next_id + 1` past Int.max, a fade's frame count) is set aside
/// and the daemon starts with none, never crashing at every start.
@Suite("A bad alarms file is set aside", .timeLimit(.minutes(1)))
struct AlarmFileTests {
    static let good = #"{"format":1,"next_id":3,"alarms":[{"id":2,"time":"07:30","days":["mon"],"fade_in_s":10,"next_at":1800000000}]}"#

    private func clock(on text: String) async throws -> (AlarmClock, WallClockTimer<Player.TimerKey>, TemporaryDirectory) {
        let directory = try TemporaryDirectory()
        try text.write(toFile: directory.path("alarms.json"), atomically: false, encoding: .utf8)
        let timer = WallClockTimer<Player.TimerKey>()
        let clock = AlarmClock(timer: timer, logger: Logger(label: "test"))
        await clock.keep(in: directory.path(""), now: Date(timeIntervalSince1970: 1_700_000_000))
        return (clock, timer, directory)
    }

    @Test func aGoodFileIsKept() async throws {
        let (clock, timer, directory) = try await clock(on: Self.good)
        defer {
            clock.shutdown()
            timer.finish()
            directory.remove()
        }
        #expect(clock.alarms.map(\.id) == [2])
        #expect(timer.moment(of: .alarm) == Date(timeIntervalSince1970: 1_800_000_000))
        #expect(try await clock.add(time: "07:00", days: [], url: nil, volume: nil, fadeIn: 1).id == 3)
    }

    @Test(arguments: [
        ("1800000000", "1e11"),  // the timer's wait trapped (SIGILL) at every start
        (#""next_id":3"#, #""next_id":9223372036854775807"#),  // the next add trapped
        (#""fade_in_s":10"#, #""fade_in_s":1e300"#),  // the fade's frame count trapped at the ring
        (#""next_id":3"#, #""next_id":2"#),  // an id not below next_id: two alarms with one id
        (#""format":1"#, #""format":2"#),
        (#""time":"07:30""#, #""time":"31:99""#),
        (#""fade_in_s":10"#, #""fade_in_s":10,"volume":1000"#),
        ("1800000000", "-5"),
    ])
    func aFileWithAValueOutOfRangeIsSetAside(_ edit: (String, String)) async throws {
        let text = Self.good.replacingOccurrences(of: edit.0, with: edit.1)
        #expect(text != Self.good)
        let (clock, timer, directory) = try await clock(on: text)
        defer {
            clock.shutdown()
            timer.finish()
            directory.remove()
        }
        #expect(clock.alarms.isEmpty && timer.moment(of: .alarm) == nil)
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path(""))
        #expect(names.contains { $0.hasPrefix("alarms.json.bad-") } && !names.contains("alarms.json"), "\(names)")
        #expect(try await clock.add(time: "07:00", days: [], url: nil, volume: nil, fadeIn: 1).id == 1)
    }

    /// A moment past 2262 (`Date.distantFuture` is one) waits as never, beside one that comes.
    @Test func theTimerOutlivesAMomentPastWhatItCanWaitFor() async throws {
        let timer = WallClockTimer<Int>()
        defer { timer.finish() }
        let fired = Locked(false)
        timer.schedule(1, at: .distantFuture) {}
        timer.schedule(3, at: Date(timeIntervalSince1970: 1e11)) {}
        timer.schedule(2, at: Date().addingTimeInterval(0.2)) { fired.withLock { $0 = true } }
        try await Task.sleep(for: .milliseconds(700))
        #expect(fired.withLock { $0 })
        #expect(timer.moment(of: 1) == .distantFuture)
    }
}
