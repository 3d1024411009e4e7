import Foundation

/// When an alarm rings: a time of day on some days of the week (every day when none are named),
/// in a calendar's time zone. Pure: the calendar and the moment to count from are given, so the
/// rule is tested across daylight-saving changes without a clock.
package struct AlarmRule: Sendable, Equatable {
    package var hour: Int
    package var minute: Int
    package var second: Int
    /// Empty: every day.
    package var days: Set<Weekday>

    /// "07:30" or "07:30:15" (24-hour); nil when it is not a time of day.
    package init?(time text: String, days: Set<Weekday> = []) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard (2...3).contains(parts.count), parts.allSatisfy({ $0.count == 2 && $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }),
            let hour = Int(parts[0]), let minute = Int(parts[1]), (0...23).contains(hour), (0...59).contains(minute)
        else { return nil }
        let second = parts.count == 3 ? Int(parts[2]) ?? 60 : 0
        guard (0...59).contains(second) else { return nil }
        self.hour = hour
        self.minute = minute
        self.second = second
        self.days = days
    }

    /// "07:30", or "07:30:15" when it has seconds.
    package var time: String {
        second == 0 ? String(format: "%02d:%02d", hour, minute) : String(format: "%02d:%02d:%02d", hour, minute, second)
    }

    /// The first moment after `date` at which the alarm rings. On the day clocks go forward, a
    /// time that does not exist rings at the first moment that does (02:30 rings at 03:00); on
    /// the day they go back, a time that comes twice rings the first time only.
    package func nextFire(after date: Date, calendar: Calendar) -> Date? {
        let wanted = DateComponents(hour: hour, minute: minute, second: second)
        var from = date
        // A week and a day covers every weekday set; a skipped or doubled hour takes no more.
        for _ in 0..<9 {
            guard
                let candidate = calendar.nextDate(
                    after: from, matching: wanted, matchingPolicy: .nextTime,
                    repeatedTimePolicy: .first, direction: .forward)
            else { return nil }
            if days.isEmpty || Weekday(calendar.component(.weekday, from: candidate)).map(days.contains) == true {
                return candidate
            }
            from = candidate
        }
        return nil
    }
}

package enum Weekday: String, Sendable, CaseIterable, Codable, Comparable {
    case mon, tue, wed, thu, fri, sat, sun

    /// From `Calendar`'s weekday number (1 is Sunday).
    package init?(_ calendarWeekday: Int) {
        let order: [Weekday] = [.sun, .mon, .tue, .wed, .thu, .fri, .sat]
        guard (1...7).contains(calendarWeekday) else { return nil }
        self = order[calendarWeekday - 1]
    }

    package static func < (a: Weekday, b: Weekday) -> Bool {
        allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!
    }
}
