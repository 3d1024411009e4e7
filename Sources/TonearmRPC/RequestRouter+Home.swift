import Foundation
import TonearmPlayer
import TonearmProtocol

/// The home-speaker methods: `sleep` (and `alarms.*`).
extension RequestRouter {
    /// `sleep {after_s, fade_s?} | {at_end_of: "item"|"queue"} | {cancel: true}`.
    func sleepAnswer(_ params: Params) throws -> JSONValue {
        let after = try params.number("after_s"), end = try params.string("at_end_of")
        let cancel = try params.bool("cancel") ?? false
        let fade = try params.number("fade_s")
        guard [after != nil, end != nil, cancel].filter({ $0 }).count == 1 else {
            throw RPC.Failure(.invalidParams, "invalid params: give one of 'after_s', 'at_end_of' or 'cancel: true'")
        }
        if cancel {
            guard fade == nil else { throw RPC.Failure(.invalidParams, "invalid params: 'fade_s' goes with 'after_s'") }
            return ["cancelled": .bool(player.cancelSleep()), "sleep": .null]
        }
        if let end {
            guard let parsed = SleepEnd(rawValue: end) else {
                throw RPC.Failure(.invalidParams, "invalid params: 'at_end_of' must be \"item\" or \"queue\"")
            }
            guard fade == nil else {
                throw RPC.Failure(.invalidParams, "invalid params: 'fade_s' goes with 'after_s' (an item ends by itself)")
            }
            return ["sleep": ProtocolEncoding.sleep(player.sleep(atEndOf: parsed))]
        }
        return ["sleep": ProtocolEncoding.sleep(try player.sleep(after: after ?? 0, fade: fade ?? 10))]
    }
}

extension ProtocolEncoding {
    /// `{at, fade_s}` (at: local time, ISO 8601 with its offset) or `{at_end_of}`.
    static func sleep(_ plan: SleepPlan?) -> JSONValue {
        switch plan {
        case nil: .null
        case .at(let at, let fade): ["at": .string(localTime(at)), "fade_s": .number(fade)]
        case .endOf(let end): ["at_end_of": .string(end.rawValue)]
        }
    }

    /// "2026-11-27T07:30:00+01:00": the system's time zone (TZ), to the second.
    static func localTime(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone.current
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: date)
    }
}
