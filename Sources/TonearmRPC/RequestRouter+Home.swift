import Foundation
import TonearmCore
import TonearmPlayer
import TonearmProtocol

/// The home-speaker methods: `announce`, `sleep` and `alarms.*`.
extension RequestRouter {
    /// `announce {url, volume?, duck?}`: `{place}` (0: it plays now; n: n − 1 others play first).
    func announceAnswer(_ params: Params) throws -> JSONValue {
        let url = try sourceURL(params.requiredString("url"))
        try sources.check(url)
        let volume = try params.integer("volume")
        let duck = try params.bool("duck") ?? false
        return ["place": JSONValue(try player.announce(url, volume: volume, duck: duck))]
    }

    /// `alarms.add {time, days?, url? | queue: true, volume?, fade_in_s?}`.
    func alarmAdd(_ params: Params) async throws -> JSONValue {
        let time = try params.requiredString("time")
        let days = try (params.stringArray("days") ?? []).map { text in
            guard let day = Weekday(rawValue: text.lowercased()) else {
                throw RPC.Failure(.invalidParams, "invalid params: 'days' holds 'mon' … 'sun', not '\(text)'")
            }
            return day
        }
        let queue = try params.bool("queue") ?? false
        let url = try params.string("url").map { text in
            let url = try sourceURL(text)
            try sources.check(url)
            return url.absoluteString
        }
        guard (url != nil) != queue else {
            throw RPC.Failure(.invalidParams, "invalid params: give 'url' or 'queue: true' (what the alarm plays)")
        }
        let volume = try params.integer("volume")
        let fadeIn = try params.number("fade_in_s") ?? 10
        let outcome: Result<Alarm, AlarmClock.Failure>
        do throws(AlarmClock.Failure) {
            outcome = .success(try await player.alarms.add(time: time, days: days, url: url, volume: volume, fadeIn: fadeIn))
        } catch { outcome = .failure(error) }
        return try Self.alarmAnswer(outcome)
    }

    /// `alarms.remove {id}`.
    func alarmRemove(_ params: Params) async throws -> JSONValue {
        let id = try params.requiredInteger("id")
        let outcome: Result<Alarm, AlarmClock.Failure>
        do throws(AlarmClock.Failure) { outcome = .success(try await player.alarms.remove(id: id)) } catch { outcome = .failure(error) }
        return try Self.alarmAnswer(outcome)
    }

    /// `{alarm}`, or the alarm clock's failure in JSON-RPC's words.
    private static func alarmAnswer(_ outcome: Result<Alarm, AlarmClock.Failure>) throws -> JSONValue {
        switch outcome {
        case .success(let alarm): return ["alarm": ProtocolEncoding.alarm(alarm)]
        case .failure(.invalid(let message)): throw RPC.Failure(.invalidParams, "invalid params: \(message)")
        case .failure(.notFound(let id)):
            throw RPC.Failure(.rejected, "no alarm with id \(id)", data: ["kind": "not_found"])
        case .failure(.notSaved(let reason)):
            throw RPC.Failure(.internalError, "the alarms could not be saved: \(reason)")
        }
    }

    /// `sleep {after_s, fade_s?} | {at_end_of: "item"|"queue"} | {cancel: true}`.
    func sleepAnswer(_ params: Params) throws -> JSONValue {
        let after = try params.number("after_s")
        let end = try params.string("at_end_of")
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
    /// `{id, time, days, url | queue: true, volume?, fade_in_s, next_at}`.
    static func alarm(_ alarm: Alarm) -> JSONValue {
        var object: [String: JSONValue] = [
            "id": JSONValue(alarm.id), "time": .string(alarm.time), "days": .array(alarm.days.map { .string($0.rawValue) }),
            "fade_in_s": .number(alarm.fadeIn), "next_at": .string(AlarmClock.localTime(alarm.nextAt)),
        ]
        if let url = alarm.url { object["url"] = .string(url) } else { object["queue"] = .bool(true) }
        if let volume = alarm.volume { object["volume"] = JSONValue(volume) }
        return .object(object)
    }

    /// `{at, fade_s}` (at: local time, ISO 8601 with its offset) or `{at_end_of}`.
    static func sleep(_ plan: SleepPlan?) -> JSONValue {
        switch plan {
        case nil: .null
        case .at(let at, let fade): ["at": .string(AlarmClock.localTime(at)), "fade_s": .number(fade)]
        case .endOf(let end): ["at_end_of": .string(end.rawValue)]
        }
    }
}
