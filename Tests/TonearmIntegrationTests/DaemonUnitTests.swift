import Foundation
import Testing
import TonearmTestSupport

#if canImport(Glibc)
    import Glibc
#endif

extension DaemonTests {
    /// The systemd units, checked with systemd's own tools where this machine allows (there is no
    /// running systemd here, so nothing is started through systemctl or systemd-run).
    @Suite("The systemd units hold", .serialized, .realDaemon(minutes: 3))
    struct DaemonUnitTests {
        static let repository = Fixtures.directory.deletingLastPathComponent().deletingLastPathComponent().path
        static let service = repository + "/systemd/tonearmd.service"
        static let socketUnit = repository + "/systemd/tonearmd.socket"

        private func run(_ tool: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
            try runTool(tool, arguments)
        }

        /// The unit's values for `key`, in order.
        private func values(_ key: String) throws -> [String] {
            try String(contentsOfFile: Self.service, encoding: .utf8).split(separator: "\n")
                .filter { $0.hasPrefix(key + "=") }.map { String($0.dropFirst(key.count + 1)) }
        }

        @Test func systemdAnalyzeRatesTheServiceOKAndVerifiesBothUnits() throws {
            let security = try run("/usr/bin/systemd-analyze", ["security", "--offline=true", Self.service])
            let line = try #require(
                security.output.split(separator: "\n").first { $0.contains("Overall exposure level") },
                "\(security.output)")
            let score = try #require(line.split(separator: ":").last?.split(separator: " ").first.flatMap { Double($0) })
            #expect(score <= 2.0, "\(line)")

            // verify needs ExecStart to exist: the same units, pointing at the built daemon.
            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            let text = try String(contentsOfFile: Self.service, encoding: .utf8)
                .replacingOccurrences(of: "/usr/local/bin/tonearmd", with: DaemonProcess.binary())
            try text.write(toFile: dir.path("tonearmd.service"), atomically: true, encoding: .utf8)
            try FileManager.default.copyItem(atPath: Self.socketUnit, toPath: dir.path("tonearmd.socket"))
            let verify = try run(
                "/usr/bin/systemd-analyze",
                [
                    "verify", "--man=no", dir.path("tonearmd.service"),
                    dir.path("tonearmd.socket"),
                ])
            #expect(verify.status == 0 && verify.output.isEmpty, "\(verify.output)")
        }

        /// Every system call the daemon makes, started from the unit's own ExecStart line and
        /// driven through a queue, playback, seeks and shutdown, is one SystemCallFilter allows.
        @Test func theDaemonRunsWithinTheUnitsSystemCallFilter() throws {
            var allowed = Set<String>()
            var groups = try values("SystemCallFilter").flatMap { $0.split(separator: " ").map(String.init) }
            #expect(!groups.isEmpty && !groups.contains { $0.hasPrefix("~") }, "an allow list: \(groups)")
            var expanded = Set<String>()
            while let group = groups.popLast() {
                guard group.hasPrefix("@") else {
                    allowed.insert(group)
                    continue
                }
                guard expanded.insert(group).inserted else { continue }
                let listing = try run("/usr/bin/systemd-analyze", ["syscall-filter", group]).output
                for entry in listing.split(separator: "\n").dropFirst() {
                    let name = entry.trimmingCharacters(in: .whitespaces)
                    if !name.isEmpty, !name.hasPrefix("#") { groups.append(name) }
                }
            }
            #expect(allowed.count > 100)

            let dir = try TemporaryDirectory()
            defer { dir.remove() }
            let execStart = try #require(values("ExecStart").first).split(separator: " ").map(String.init)
            let arguments = execStart.dropFirst().map { argument -> String in
                switch argument {
                case "/etc/tonearm/tonearmd.toml": Self.repository + "/config/tonearmd.toml"
                case "/run/tonearm/tonearm.sock": dir.path("control.sock")
                default: argument
                }
            }
            let trace = dir.path("strace.out")
            let daemon = Process()
            daemon.executableURL = URL(fileURLWithPath: "/usr/bin/strace")
            daemon.arguments =
                ["-f", "-qq", "-o", trace, DaemonProcess.binary()] + arguments
                + [
                    "--device", "null", "--pace", "--speed", "4", "--state-directory", dir.path("state"),
                    // The shipped config's web remote, on a port of its own (others run beside this test).
                    "--http", "127.0.0.1:\(try freeTCPPort())",
                ]
            daemon.standardOutput = FileHandle.nullDevice
            daemon.standardError = FileHandle.nullDevice
            try daemon.run()
            defer { if daemon.isRunning { kill(daemon.processIdentifier, SIGKILL) } }
            let connected = try #require(
                LineClient.waitingForSocket(dir.path("control.sock"), timeout: 20),
                "the daemon did not start under strace")
            _ = try connected.call("add", ["urls": [Fixtures.path("tone.flac"), Fixtures.path("tone.mp3")], "play": true])
            _ = try connected.call("seek", ["position": 2.5])
            _ = try connected.call("volume", ["level": 50])
            _ = try waitForStatus(connected) { $0["current"] as? Int == 1 }
            _ = try connected.call("pause")
            _ = try connected.call("next")
            _ = try connected.call("subscribe", ["events": ["transition", "queue"]])
            _ = try connected.call("stop")
            // strace runs the daemon as its child: SIGTERM goes to the daemon itself.
            let daemonPID = try String(
                contentsOfFile: "/proc/\(daemon.processIdentifier)/task/\(daemon.processIdentifier)/children",
                encoding: .utf8
            ).split(separator: " ").first.flatMap { Int32($0) }
            kill(try #require(daemonPID), SIGTERM)
            daemon.waitUntilExit()

            var used = Set<String>()
            for line in try String(contentsOfFile: trace, encoding: .utf8).split(separator: "\n") {
                let fields = line.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
                guard fields.count == 2 else { continue }
                var rest = fields[1].drop { $0 == " " }
                if rest.hasPrefix("<... ") { rest = rest.dropFirst(5) }
                let name = rest.prefix { $0.isLetter || $0.isNumber || $0 == "_" }
                if !name.isEmpty, rest.dropFirst(name.count).first == "(" || rest.dropFirst(name.count).hasPrefix(" resumed") {
                    used.insert(String(name))
                }
            }
            #expect(used.count > 20, "strace saw \(used.count) system calls")
            let outside = used.subtracting(allowed).sorted()
            #expect(outside.isEmpty, "outside SystemCallFilter: \(outside)")
        }
    }
}
