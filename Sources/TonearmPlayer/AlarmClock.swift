import Foundation
import Logging
import TonearmCore
import TonearmSync

/// One alarm: a time of day on some days, what it plays (a URL, or the queue from its start),
/// at what volume, fading in over how long; and when it rings next.
public struct Alarm: Sendable, Equatable, Codable {
    public let id: Int
    public var time: String
    /// Sorted; empty: every day.
    public var days: [Weekday]
    /// What it plays; nil: the queue, from its first item.
    public var url: String?
    public var volume: Int?
    public var fadeIn: Double
    /// The moment it rings next. Kept: a moment that passed while the daemon was not running is
    /// a missed alarm, said in the log, never rung late.
    public var nextAt: Date

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
public final class AlarmClock: Sendable {
    public static let maximumCount = 100
    /// Rung this much after its moment (the clock jumped forward, the machine slept), an alarm
    /// is a missed one.
    static let lateness = 60.0

    private struct Book {
        var file: StateFile?
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
    }

    public enum Failure: Error, Equatable {
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
    private let calendar: Calendar

    init(timer: WallClockTimer<Player.TimerKey>, logger: Logger, calendar: Calendar = .current) {
        self.timer = timer
        self.logger = logger
        self.calendar = calendar
    }

    func onRing(_ ring: @escaping @Sendable (Alarm) -> Void) { ringer.withLock { $0 = ring } }

    /// Reads `alarms.json` from `directory`: alarms whose moment passed meanwhile are logged
    /// as missed and set for their next one; the earliest is armed. A file that is not an
    /// alarms file is set aside (`alarms.json.bad-<time>`) and the daemon starts with none.
    public func keep(in directory: String, now: Date = Date()) async {
        await onJobs { [self] in
            let file = StateFile(directory: directory, name: "alarms.json")
            var saved = Saved(nextID: 1, alarms: [])
            switch StateFile.readRegularFile(file.path, limit: 1 << 20) {
            case .success(let bytes):
                do {
                    saved = try Self.decoder.decode(Saved.self, from: Data(bytes))
                    if let bad = saved.alarms.first(where: { $0.rule == nil }) { throw Failure.invalid("alarm \(bad.id): time '\(bad.time)'") }
                } catch {
                    let kept = file.setAside(reason: "\(error)", now: now)
                    logger.error("alarms file is not usable; starting with none", metadata: ["file": "\(file.path)", "error": "\(error)",
                                                                                            "kept": "\(kept)"])
                    saved = Saved(nextID: 1, alarms: [])
                }
            case .failure(.missing):
                break
            case .failure(let refusal):
                logger.error("alarms file cannot be read; starting with none", metadata: ["file": "\(file.path)", "error": "\(refusal)"])
            }
            var changed = false
            for index in saved.alarms.indices where saved.alarms[index].nextAt < now {
                logger.warning("alarm missed: tonearmd was not running when it was due; not played late", metadata: [
                    "alarm": "\(saved.alarms[index].id)", "time": "\(saved.alarms[index].time)",
                    "due": "\(Self.localTime(saved.alarms[index].nextAt, calendar))"])
                saved.alarms[index].nextAt = saved.alarms[index].rule?.nextFire(after: now, calendar: calendar) ?? .distantFuture
                changed = true
            }
            book.withLock { $0 = Book(file: file, alarms: saved.alarms, nextID: saved.nextID) }
            if changed { try? save() }
            arm()
        }
    }

    public var alarms: [Alarm] { book.withLock { $0.alarms } }

    /// Adds an alarm; answered once it is on disk.
    public func add(time: String, days: [Weekday], url: String?, volume: Int?, fadeIn: Double,
                    now: Date = Date()) async throws(Failure) -> Alarm {
        guard let rule = AlarmRule(time: time, days: Set(days)) else {
            throw .invalid("time must be HH:MM or HH:MM:SS (24-hour), not '\(time)'")
        }
        if let volume, !(0...100).contains(volume) { throw .invalid("volume must be a whole number from 0 to 100") }
        guard fadeIn.isFinite, (0...600).contains(fadeIn) else { throw .invalid("fade_in_s must be a number of seconds from 0 to 600") }
        guard let next = rule.nextFire(after: now, calendar: calendar) else { throw .invalid("'\(time)' never comes") }
        return try await change { book throws(Failure) in
            guard book.alarms.count < Self.maximumCount else { throw .invalid("there are \(Self.maximumCount) alarms already") }
            let alarm = Alarm(id: book.nextID, time: rule.time, days: Set(days).sorted(), url: url, volume: volume, fadeIn: fadeIn,
                              nextAt: next)
            book.nextID += 1
            book.alarms.append(alarm)
            return alarm
        }
    }

    /// Removes an alarm; answered once that is on disk.
    public func remove(id: Int) async throws(Failure) -> Alarm {
        try await change { book throws(Failure) in
            guard let index = book.alarms.firstIndex(where: { $0.id == id }) else { throw .notFound(id) }
            return book.alarms.remove(at: index)
        }
    }

    public func shutdown() { jobs.finish() }

    // MARK: On tonearm-alarms

    /// Makes `edit` on `tonearm-alarms`, saves, re-arms; the edit is undone if it cannot be saved.
    private func change<T: Sendable>(_ edit: @escaping @Sendable (inout Book) throws(Failure) -> T) async throws(Failure) -> T {
        let result: Result<T, Failure> = await onJobs { [self] in
            let before = book.withLock { $0 }
            guard before.file != nil else { return .failure(.notSaved("alarms are not ready yet (the daemon is starting)")) }
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
                    logger.warning("alarm missed: rung too late (the clock jumped, or the machine slept); not played", metadata: [
                        "alarm": "\(alarm.id)", "due": "\(Self.localTime(alarm.nextAt, calendar))"])
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
    public static func localTime(_ date: Date, _ calendar: Calendar = .current) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = calendar.timeZone
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: date)
    }
}
