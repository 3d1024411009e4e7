import Foundation
import Testing
import TonearmCore

/// When an alarm rings, in a given time zone, across days, weekdays and daylight-saving changes.
@Suite("Alarm rule: the next time it rings")
struct AlarmRuleTests {
    static func calendar(_ zone: String) -> Calendar {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: zone)!
        return calendar
    }

    /// "2026-03-28 22:00" in `zone`.
    static func date(_ text: String, _ zone: String) -> Date {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: zone)
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss"
        return formatter.date(from: text.count == 16 ? text + ":00" : text)!
    }

    static func shown(_ date: Date?, _ zone: String) -> String {
        guard let date else { return "never" }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: zone)
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss xxx"
        return formatter.string(from: date)
    }

    struct Row: Sendable, CustomStringConvertible {
        let time: String
        let days: Set<Weekday>
        let zone: String
        let after: String
        let rings: String
        var description: String { "\(time) \(days.sorted()) after \(after) \(zone)" }
    }

    static let rows: [Row] = [
        Row(time: "07:30", days: [], zone: "UTC", after: "2026-11-27 06:00", rings: "2026-11-27 07:30:00 +00:00"),
        Row(time: "07:30", days: [], zone: "UTC", after: "2026-11-27 07:30", rings: "2026-11-28 07:30:00 +00:00"),
        Row(time: "07:30:15", days: [], zone: "UTC", after: "2026-11-27 07:30", rings: "2026-11-27 07:30:15 +00:00"),
        // 2026-11-27 is a Friday: the next Monday is the 30th.
        Row(time: "07:30", days: [.mon], zone: "UTC", after: "2026-11-27 06:00", rings: "2026-11-30 07:30:00 +00:00"),
        Row(time: "07:30", days: [.sat, .sun], zone: "UTC", after: "2026-11-27 08:00", rings: "2026-11-28 07:30:00 +00:00"),
        Row(time: "07:30", days: [.fri], zone: "UTC", after: "2026-11-27 08:00", rings: "2026-12-04 07:30:00 +00:00"),
        // Local time, not UTC.
        Row(time: "07:30", days: [], zone: "America/New_York", after: "2026-11-27 06:00", rings: "2026-11-27 07:30:00 -05:00"),
        // Clocks go forward in Berlin on 2026-03-29 at 02:00 (to 03:00): 02:30 does not exist.
        Row(time: "02:30", days: [], zone: "Europe/Berlin", after: "2026-03-28 22:00", rings: "2026-03-29 03:00:00 +02:00"),
        Row(time: "07:30", days: [], zone: "Europe/Berlin", after: "2026-03-28 22:00", rings: "2026-03-29 07:30:00 +02:00"),
        // And back on 2026-10-25 at 03:00 (to 02:00): 02:30 comes twice, it rings the first time.
        Row(time: "02:30", days: [], zone: "Europe/Berlin", after: "2026-10-24 22:00", rings: "2026-10-25 02:30:00 +02:00"),
        Row(time: "07:30", days: [], zone: "Europe/Berlin", after: "2026-10-24 22:00", rings: "2026-10-25 07:30:00 +01:00"),
    ]

    @Test(arguments: rows)
    func ringsAt(_ row: Row) throws {
        let rule = try #require(AlarmRule(time: row.time, days: row.days))
        let next = rule.nextFire(after: Self.date(row.after, row.zone), calendar: Self.calendar(row.zone))
        #expect(Self.shown(next, row.zone) == row.rings)
    }

    /// After ringing at 02:30 the first time, not again an hour later in the repeated hour.
    @Test func aRepeatedHourRingsOnce() throws {
        let rule = try #require(AlarmRule(time: "02:30"))
        let zone = "Europe/Berlin"
        let first = try #require(rule.nextFire(after: Self.date("2026-10-24 22:00", zone), calendar: Self.calendar(zone)))
        let second = rule.nextFire(after: first, calendar: Self.calendar(zone))
        #expect(Self.shown(second, zone) == "2026-10-26 02:30:00 +01:00")
    }

    @Test(arguments: ["7:30", "07:3", "24:00", "07:60", "07:30:60", "07-30", "", "07:30:", "ab:cd", "07:30:15:00", "٠٧:٣٠"])
    func notATimeOfDay(_ text: String) {
        #expect(AlarmRule(time: text) == nil)
    }

    @Test func timeIsShownAsGiven() {
        #expect(AlarmRule(time: "07:05")?.time == "07:05")
        #expect(AlarmRule(time: "23:59:01")?.time == "23:59:01")
    }

    @Test func weekdaysFromTheCalendar() {
        #expect(Weekday(1) == .sun && Weekday(2) == .mon && Weekday(7) == .sat && Weekday(0) == nil)
    }
}
