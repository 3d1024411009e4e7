import Foundation
import Testing
import TonearmTestSupport

extension DaemonTests {
    /// Alarms on the real daemon: ringing at local time (`TZ`), fading in, kept across a
    /// `kill -9`, a missed one not played late, and no wake-ups while waiting.
    @Suite("Daemon alarms", .serialized, .realDaemon(minutes: 3))
    struct DaemonAlarmTests {
        typealias Capture = DaemonGaplessTests.Capture
        static let rate = 44100

        /// "HH:MM:SS" of `date` in `zone`.
        static func clockTime(_ date: Date, _ zone: String) -> String {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = TimeZone(identifier: zone)
            formatter.dateFormat = "HH:mm:ss"
            return formatter.string(from: date)
        }

        static func moment(_ value: Any?) -> Date? {
            guard let text = value as? String else { return nil }
            return ISO8601DateFormatter().date(from: text)
        }

        /// The next whole second at least `seconds` from now.
        static func soon(_ seconds: Double) -> Date {
            Date(timeIntervalSince1970: (Date().timeIntervalSince1970 + seconds).rounded(.up))
        }

        @Test func anAlarmRingsAtItsLocalTimeAndFadesIn() throws {
            let capture = try Capture()
            defer { capture.dir.remove() }
            let path = capture.dir.path("sine.wav")
            let made = try runTool(
                "/usr/bin/ffmpeg",
                [
                    "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "sine=f=440:sample_rate=\(Self.rate)",
                    "-t", "10", "-ac", "2", "-c:a", "pcm_s16le", path,
                ], timeout: 60)
            try #require(made.status == 0, "\(made.output)")
            let raw = try runTool(
                "/usr/bin/ffmpeg", ["-nostdin", "-v", "error", "-y", "-i", path, "-f", "s16le", path + ".raw"], timeout: 60)
            try #require(raw.status == 0, "\(raw.output)")
            let source = DaemonSleepTests.samples(try Data(contentsOf: URL(fileURLWithPath: path + ".raw")))
            let zone = "America/New_York"
            let daemon = try DaemonProcess(arguments: ["--device", capture.device, "--pace"], environment: ["TZ": zone])
            defer { withExtendedLifetime(daemon) {} }
            let client = try daemon.connect()
            let watcher = try daemon.connect()
            #expect(try watcher.call("subscribe", ["events": ["transition"]]).result != nil)
            let due = Self.soon(2)
            let added = try client.call("alarms.add", ["time": Self.clockTime(due, zone), "url": path, "fade_in_s": 0.5])
            let alarm = try #require(added.result?["alarm"] as? [String: Any], "\(added)")
            let nextAt = try #require(Self.moment(alarm["next_at"]))
            #expect(nextAt == due && (alarm["next_at"] as? String)?.hasSuffix("-05:00") == true, "\(alarm)")
            #expect(alarm["url"] as? String == URL(fileURLWithPath: path).absoluteString && alarm["fade_in_s"] as? Double == 0.5)
            _ = try readEvents(watcher, timeout: 10 * Sanitizer.timeScale) { $0.transitionTo == "playing" }
            let late = Date().timeIntervalSince(due)
            #expect(late >= 0 && late < 1 * Sanitizer.timeScale, "rang \(late) s after its time")
            usleep(1_500_000)
            _ = try client.call("pause")
            let pcm = DaemonSleepTests.samples(capture.settled())
            let ramp = Self.rate / 2
            try #require(pcm.count >= (ramp + Self.rate / 2) * 2, "\(pcm.count) samples")
            var worst = 0.0
            for frame in 0..<ramp {
                let expected = (Double(source[frame * 2]) * Double(frame + 1) / Double(ramp)).rounded()
                worst = max(worst, abs(Double(pcm[frame * 2]) - expected))
            }
            #expect(worst <= 1, "fades in linearly from silence (worst \(worst) LSB)")
            let after = Array(pcm[ramp * 2..<(ramp + Self.rate / 2) * 2]) == Array(source[ramp * 2..<(ramp + Self.rate / 2) * 2])
            #expect(after, "then at full level, bit-exact")
            let listed = try #require(client.call("alarms.list").result?["alarms"] as? [[String: Any]])
            let next = try #require(Self.moment(listed.first?["next_at"]))
            #expect(abs(next.timeIntervalSince(due) - 86_400) < 1, "set for the same time tomorrow: \(listed)")
        }

        /// Saved before the answer: a `kill -9` right after keeps them; one whose time passed while
        /// the daemon was down is logged as missed, set for its next time, and not played.
        @Test func alarmsSurviveAKillNineAndAMissedOneIsNotPlayedLate() throws {
            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            let environment = ["STATE_DIRECTORY": dir.path("state"), "TZ": "UTC"]
            let first = try DaemonProcess(arguments: ["--device", "null"], environment: environment)
            let client = try first.connect()
            let due = Self.soon(2)
            let soon = try #require(
                client.call("alarms.add", ["time": Self.clockTime(due, "UTC"), "queue": true])
                    .result?["alarm"] as? [String: Any])
            let weekly = try #require(
                client.call(
                    "alarms.add",
                    [
                        "time": "07:30", "days": ["mon", "fri"], "url": Fixtures.path("tone.wav"),
                        "volume": 40, "fade_in_s": 30,
                    ]
                ).result?["alarm"] as? [String: Any])
            kill(first.process.processIdentifier, SIGKILL)
            first.process.waitUntilExit()
            while Date() < due.addingTimeInterval(1) { usleep(100_000) }

            let second = try DaemonProcess(arguments: ["--device", "null"], environment: environment)
            let again = try second.connect()
            let listed = try #require(again.call("alarms.list").result?["alarms"] as? [[String: Any]])
            #expect(listed.map { $0["id"] as? Int } == [soon["id"] as? Int, weekly["id"] as? Int], "\(listed)")
            #expect(
                listed.last?["days"] as? [String] == ["mon", "fri"] && listed.last?["volume"] as? Int == 40
                    && listed.last?["fade_in_s"] as? Double == 30 && listed.last?["time"] as? String == "07:30")
            let next = try #require(Self.moment(listed.first?["next_at"]))
            #expect(abs(next.timeIntervalSince(due) - 86_400) < 1, "set for tomorrow: \(listed)")
            usleep(300_000)
            #expect(try again.call("status").result?.name == "idle", "nothing played late")
            #expect(second.log.contains("alarm missed"), "\(second.log)")
            // Removed, and a new one gets a new id.
            #expect(
                (try again.call("alarms.remove", ["id": soon["id"] as? Int ?? 0]).result?["alarm"] as? [String: Any])?["id"] as? Int
                    == soon["id"] as? Int)
            let third = try again.call("alarms.add", ["time": "08:00", "queue": true]).result?["alarm"] as? [String: Any]
            #expect((third?["id"] as? Int ?? 0) > (weekly["id"] as? Int ?? 0))
        }

        /// Waiting for an alarm an hour away, an idle daemon's threads sleep: no context switch in 3 s.
        @Test func anIdleDaemonWithAlarmsMakesNoWakeUps() throws {
            let daemon = try DaemonProcess(arguments: ["--device", "null"], environment: ["TZ": "UTC"])
            defer { withExtendedLifetime(daemon) {} }
            let client = try daemon.connect()
            _ = try client.call("alarms.add", ["time": Self.clockTime(Date().addingTimeInterval(3600), "UTC"), "queue": true])
            _ = try client.call("sleep", ["after_s": 7200])
            usleep(1_500_000)
            let pid = daemon.process.processIdentifier
            let before = try Self.switches(pid)
            usleep(3_000_000)
            let after = try Self.switches(pid)
            let woke = after.filter { before[$0.key] != $0.value }
            #expect(woke.isEmpty, "threads that woke: \(woke.map { "\($0.key) +\($0.value - (before[$0.key] ?? 0))" })")
        }

        /// Context switches by thread (name and id) of the daemon's own threads: under a
        /// sanitizer, the runtime's background thread (unnamed, so called as the process, and not
        /// the main thread) wakes by itself every few milliseconds, and is left out.
        static func switches(_ pid: Int32) throws -> [String: Int] {
            var counts: [String: Int] = [:]
            for task in try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") {
                guard let status = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/status", encoding: .utf8) else { continue }
                if Sanitizer.active != nil, task != "\(pid)", status.hasPrefix("Name:\ttonearmd\n") { continue }
                var name = task
                var total = 0
                for line in status.split(separator: "\n") {
                    if line.hasPrefix("Name:") { name = line.dropFirst(5).trimmingCharacters(in: .whitespaces) + "/" + task }
                    if line.hasPrefix("voluntary_ctxt_switches:") || line.hasPrefix("nonvoluntary_ctxt_switches:") {
                        total += Int(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) ?? 0
                    }
                }
                counts[name] = total
            }
            return counts
        }

        @Test func badAlarmsGetAClearError() throws {
            let daemon = try DaemonProcess(arguments: ["--device", "null"])
            let client = try daemon.connect()
            let bad: [[String: Any]] = [
                [:], ["time": "25:00", "queue": true], ["time": "7:30", "queue": true],
                ["time": "07:30"], ["time": "07:30", "queue": true, "url": Fixtures.path("tone.wav")],
                ["time": "07:30", "queue": true, "days": ["funday"]], ["time": "07:30", "queue": true, "volume": 101],
                ["time": "07:30", "queue": true, "fade_in_s": 601],
                ["time": "07:30", "queue": true, "snooze": 5],
            ]
            for params in bad {
                let answer = try client.call("alarms.add", params)
                #expect(answer.errorCode == -32602 && answer.errorMessage?.isEmpty == false, "\(params): \(answer)")
            }
            // A URL the source rules refuse is refused as `load` refuses it.
            let refused = try client.call("alarms.add", ["time": "07:30", "url": "ftp://x/y.mp3"])
            #expect(refused.errorData?["kind"] as? String == "permission_denied", "\(refused)")
            let missing = try client.call("alarms.remove", ["id": 99])
            #expect(missing.errorCode == -32000 && missing.errorData?["kind"] as? String == "not_found", "\(missing)")
            #expect((try client.call("alarms.list").result?["alarms"] as? [Any])?.isEmpty == true)
        }
    }
}
