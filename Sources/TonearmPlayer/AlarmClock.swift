import Foundation
import Logging
import TonearmCore
import TonearmMedia
import TonearmSync

/// One alarm: a time of day on some days, what it plays (a URL, or the queue from its start),
/// at what volume, fading in over how long; and when it rings next.
package struct Alarm: Sendable, Equatable, Codable {
    package let id: Int
    package var time: String
    /// Sorted; empty: every day.
    package var days: [Weekday]
    /// What it plays; nil: the queue, from its first item.
    package var url: String?
    package var volume: Int?
    package var fadeIn: Double
    /// The moment it rings next. Kept: a moment that passed while the daemon was not running is
    /// a missed alarm, said in the log, never rung late.
    package var nextAt: Date

    enum CodingKeys: String, CodingKey {
        case id, time, days, url, volume
        case fadeIn = "fade_in_s"
        case nextAt = "next_at"
    }

    var rule: AlarmRule? { AlarmRule(time: time, days: Set(days)) }
}

/// The alarms (`alarms.add`, `alarms.list`, `alarms.remove`): kept in `alarms.json` in the state
/// directory, written whole, atomically and durably before a change is answered, by
/// `tonearm-alarms` alone (every change and every ring runs there, one at a time). The next
/// ring is the one moment the player's `WallClockTimer` waits for. Local time is the system's
/// time zone (`TZ`, /etc/localtime), read as the daemon starts.
package final class AlarmClock: Sendable {
    package static let maximumCount = 100
    /// Ids go to clients as JSON numbers (exact up to 2^53); bounding `next_id` by it also means
    /// `nextID += 1` never overflows.
    static let maximumID = 1 << 53
    /// An alarm's next moment is at most nine days after the moment it was reckoned from: one past
    /// 2200 is damage (and past 2262 the timer's wait could not even be expressed in nanoseconds).
    static var latestMoment: Date { WallClockTimer<Player.TimerKey>.latest }
    /// Rung this much after its moment (the clock jumped forward, the machine slept), an alarm
    /// is a missed one.
    static let lateness = 60.0

    private struct Book {
        var file: StateFile?
        /// Why `file` is nil: not read yet, or an unusable file that could not be set aside (it is
        /// never written over).
        var noFile = "alarms are not ready yet (the daemon is starting)"
        var alarms: [Alarm] = []
        var nextID = 1
    }

    private struct Saved: Codable {
        var format = 1
        var nextID: Int
        var alarms: [Alarm]
        enum CodingKeys: String, CodingKey {
            case format
            case nextID = "next_id"
            case alarms
        }

        /// Why this is not an alarms file the clock can run on, if it is not: every value the
        /// clock computes with is bounded here, so a damaged or hand-edited file is set aside
        /// rather than trapping later (a timer past 2262, `next_id + 1`, a fade's frame count).
        var problem: String? {
            if format != 1 { return "format \(format) is not 1" }
            guard (1...AlarmClock.maximumID).contains(nextID) else { return "next_id \(nextID) is out of 1…2^53" }
            guard alarms.count <= AlarmClock.maximumCount else { return "\(alarms.count) alarms, over \(AlarmClock.maximumCount)" }
            var ids = Set<Int>()
            for alarm in alarms {
                guard (1..<nextID).contains(alarm.id), ids.insert(alarm.id).inserted else {
                    return "alarm id \(alarm.id) is not unique, or not from 1 to below next_id \(nextID)"
                }
                if alarm.rule == nil { return "alarm \(alarm.id): time '\(alarm.time)' is not HH:MM or HH:MM:SS" }
                if let volume = alarm.volume, !Bounds.volume.contains(volume) {
                    return "alarm \(alarm.id): volume \(volume) is out of 0…100"
                }
                guard alarm.fadeIn.isFinite, (0...600).contains(alarm.fadeIn) else {
                    return "alarm \(alarm.id): fade_in_s \(alarm.fadeIn) is out of 0…600"
                }
                // `.distantFuture` is what the clock itself writes for "never" (see `ringDue`).
                let at = alarm.nextAt.timeIntervalSince1970
                guard alarm.nextAt == .distantFuture || (at >= 0 && alarm.nextAt < AlarmClock.latestMoment) else {
                    return "alarm \(alarm.id): next_at \(at) is not a moment from 1970 to 2200"
                }
            }
            return nil
        }
    }

    package enum Failure: Error, Equatable {
        case invalid(String)
        case notFound(Int)
        case notSaved(String)
    }

    private let book = Locked(Book())
    private let jobs = JobThread(name: "tonearm-alarms")
    private let timer: WallClockTimer<Player.TimerKey>
    private let logger: Logger
    /// What ringing does (the player's `ring`), set once by the player.
    private let ringer = Locked<(@Sendable (Alarm) -> Void)?>(nil)
    private let fixedCalendar: Calendar?
    /// The user's calendar, looked up when an alarm needs it: `Calendar.current` loads ICU's
    /// locale data (about 4 MiB resident), which a daemon with no alarms never needs.
    private var calendar: Calendar { fixedCalendar ?? .current }

    init(timer: WallClockTimer<Player.TimerKey>, logger: Logger, calendar: Calendar? = nil) {
        self.timer = timer
        self.logger = logger
        fixedCalendar = calendar
    }

    func onRing(_ ring: @escaping @Sendable (Alarm) -> Void) { ringer.withLock { $0 = ring } }

    /// Reads `alarms.json` from `directory`: alarms whose moment passed meanwhile are logged
    /// as missed and set for their next one; the earliest is armed. A file that is not an
    /// alarms file (or holds values out of range, see `Saved.problem`), or that cannot be read, is
    /// set aside (`alarms.json.bad-<time>`) and the daemon starts with none; should that rename
    /// fail too, the file is left as it is and alarm changes are refused, not saved over it.
    package func keep(in directory: String, now: Date = Date()) async {
        await onJobs { [self] in
            let file = StateFile(directory: directory, name: "alarms.json")
            var saved = Saved(nextID: 1, alarms: [])
            let problem: String?
            switch StateFile.readRegularFile(file.path, limit: 1 << 20) {
            case .success(let bytes):
                do {
                    saved = try Self.decoder.decode(Saved.self, from: Data(bytes))
                    problem = saved.problem
                } catch {
                    problem = bytes.isEmpty ? "the file is empty" : "not an alarms file (\(error))"
                }
            case .failure(.missing):
                problem = nil
            case .failure(let refusal):
                problem = refusal.description
            }
            var noFile: String?
            if let problem {
                saved = Saved(nextID: 1, alarms: [])
                switch file.setAside(reason: problem, now: now) {
                case .setAside(_, let keptAs):
                    logger.error(
                        "alarms file is not usable; set aside, starting with none",
                        metadata: [
                            "file": "\(file.path)", "error": "\(problem)", "kept": "\(keptAs)",
                        ])
                case .stuck(_, let renameError):
                    noFile = "\(file.path) is not usable and could not be set aside (\(renameError)); alarm changes are not saved"
                    logger.error(
                        "alarms file is not usable and cannot be set aside; starting with none, saving nothing",
                        metadata: [
                            "file": "\(file.path)", "error": "\(problem)", "rename": "\(renameError)",
                        ])
                case .none, .state:
                    break
                }
            }
            var changed = false
            for index in saved.alarms.indices where saved.alarms[index].nextAt < now {
                logger.warning(
                    "alarm missed: tonearmd was not running when it was due; not played late",
                    metadata: [
                        "alarm": "\(saved.alarms[index].id)", "time": "\(saved.alarms[index].time)",
                        "due": "\(Self.localTime(saved.alarms[index].nextAt, calendar))",
                    ])
                saved.alarms[index].nextAt = saved.alarms[index].rule?.nextFire(after: now, calendar: calendar) ?? .distantFuture
                changed = true
            }
            book.withLock { book in
                book = Book(file: noFile == nil ? file : nil, alarms: saved.alarms, nextID: saved.nextID)
                if let noFile { book.noFile = noFile }
            }
            if changed { try? save() }
            arm()
        }
    }

    package var alarms: [Alarm] { book.withLock { $0.alarms } }

    /// Adds an alarm; answered once it is on disk.
    package func add(
        time: String, days: [Weekday], url: String?, volume: Int?, fadeIn: Double,
        now: Date = Date()
    ) async throws(Failure) -> Alarm {
        guard let rule = AlarmRule(time: time, days: Set(days)) else {
            throw .invalid("time must be HH:MM or HH:MM:SS (24-hour), not '\(time)'")
        }
        if let volume, !Bounds.volume.contains(volume) {
            throw .invalid("volume must be a whole number from \(Bounds.text(Bounds.volume))")
        }
        guard fadeIn.isFinite, (0...600).contains(fadeIn) else { throw .invalid("fade_in_s must be a number of seconds from 0 to 600") }
        guard let next = rule.nextFire(after: now, calendar: calendar) else { throw .invalid("'\(time)' never comes") }
        return try await change { book throws(Failure) in
            guard book.alarms.count < Self.maximumCount else { throw .invalid("there are \(Self.maximumCount) alarms already") }
            guard book.nextID < Self.maximumID else { throw .invalid("no alarm ids are left (next_id \(book.nextID))") }
            let alarm = Alarm(
                id: book.nextID, time: rule.time, days: Set(days).sorted(), url: url, volume: volume, fadeIn: fadeIn,
                nextAt: next)
            book.nextID += 1
            book.alarms.append(alarm)
            return alarm
        }
    }

    /// Removes an alarm; answered once that is on disk.
    package func remove(id: Int) async throws(Failure) -> Alarm {
        try await change { book throws(Failure) in
            guard let index = book.alarms.firstIndex(where: { $0.id == id }) else { throw .notFound(id) }
            return book.alarms.remove(at: index)
        }
    }

    package func shutdown() { jobs.finish() }

    // MARK: On tonearm-alarms

    /// Makes `edit` on `tonearm-alarms`, saves, re-arms; the edit is undone if it cannot be saved.
    private func change<T: Sendable>(_ edit: @escaping @Sendable (inout Book) throws(Failure) -> T) async throws(Failure) -> T {
        let result: Result<T, Failure> = await onJobs { [self] in
            let before = book.withLock { $0 }
            guard before.file != nil else { return .failure(.notSaved(before.noFile)) }
            do throws(Failure) {
                let value = try book.withLock { (book: inout Book) throws(Failure) -> T in try edit(&book) }
                do throws(StateFile.WriteError) { try save() } catch {
                    book.withLock { $0 = before }
                    return .failure(.notSaved(error.description))
                }
                arm()
                return .success(value)
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    private func save() throws(StateFile.WriteError) {
        let (file, saved) = book.withLock { ($0.file, Saved(nextID: $0.nextID, alarms: $0.alarms)) }
        guard let file else { return }
        let data: Data
        do { data = try Self.encoder.encode(saved) } catch { throw StateFile.WriteError(description: "cannot encode the alarms: \(error)") }
        try file.write(data)
    }

    /// Sets the timer for the earliest alarm (none: nothing is waited for).
    private func arm() {
        guard let earliest = book.withLock({ $0.alarms.map(\.nextAt).min() }), earliest != .distantFuture else {
            timer.cancel(.alarm)
            return
        }
        timer.schedule(.alarm, at: earliest) { [weak self] in
            guard let self else { return }
            jobs.async { self.ringDue(now: Date()) }
        }
    }

    /// Rings what is due (a moment passed by more than `lateness` is missed instead), sets each
    /// for its next moment, saves, re-arms.
    private func ringDue(now: Date) {
        var rung: [Alarm] = []
        book.withLock { book in
            for index in book.alarms.indices where book.alarms[index].nextAt <= now {
                let alarm = book.alarms[index]
                if now.timeIntervalSince(alarm.nextAt) > Self.lateness {
                    logger.warning(
                        "alarm missed: rung too late (the clock jumped, or the machine slept); not played",
                        metadata: [
                            "alarm": "\(alarm.id)", "due": "\(Self.localTime(alarm.nextAt, calendar))",
                        ])
                } else {
                    rung.append(alarm)
                }
                book.alarms[index].nextAt = alarm.rule?.nextFire(after: max(now, alarm.nextAt), calendar: calendar) ?? .distantFuture
            }
        }
        do { try save() } catch { logger.error("cannot save the alarms", metadata: ["error": "\(error)"]) }
        arm()
        for alarm in rung {
            logger.info("alarm rings", metadata: ["alarm": "\(alarm.id)", "time": "\(alarm.time)"])
            ringer.withLock { $0 }?(alarm)
        }
    }

    private func onJobs<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            jobs.async { continuation.resume(returning: body()) }
        }
    }

    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }()

    static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        return decoder
    }()

    /// "2026-11-27T07:30:00+01:00".
    package static func localTime(_ date: Date, _ calendar: Calendar = .current) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = calendar.timeZone
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: date)
    }
}
