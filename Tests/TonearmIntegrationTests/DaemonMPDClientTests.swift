import Foundation
import Testing
import TonearmProtocol
import TonearmTestSupport

#if canImport(Glibc)
    import Glibc
#endif

extension DaemonTests {
    /// The MPD clients people already use, unchanged, against the real daemon: Debian's `mpc`,
    /// and python-mpd2 (from PyPI, in a virtualenv the test makes) driven as Home Assistant's MPD
    /// integration drives it. What they say is checked against the JSON-RPC view and the audio.
    @Suite("Real MPD clients drive the daemon", .serialized, .realDaemon(minutes: 5))
    struct DaemonMPDClientTests {
        /// tone.wav (3 s) cut in three, for a gapless capture; and three long files for control.
        static let cuts = [0, 37817, 91009, 132300]

        private func cutWAVs(into music: TemporaryDirectory) throws -> [String] {
            let pcm = try Fixtures.wavPCM("tone.wav")
            return try (1...3).map { part in
                let name = "part\(part).wav"
                try wavFile(pcm: pcm.subdata(in: Self.cuts[part - 1] * 4..<Self.cuts[part] * 4))
                    .write(to: URL(fileURLWithPath: music.path(name)))
                return name
            }
        }

        /// `count` files of tone.wav repeated to `seconds`.
        private func longWAVs(into music: TemporaryDirectory, count: Int, seconds: Int) throws -> [String] {
            let pcm = try Fixtures.wavPCM("tone.wav")
            var long = Data()
            while long.count < seconds * 44100 * 4 { long += pcm }
            return try (1...count).map { index in
                let name = "long\(index).wav"
                try wavFile(pcm: long).write(to: URL(fileURLWithPath: music.path(name)))
                return name
            }
        }

        private func config(_ music: TemporaryDirectory) throws -> String {
            let path = music.path(".tonearmd.toml")
            try "[mpd]\nmusic_directory = \"\(music.url.path)\"\n".write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }

        @Test func mpcPlaysAQueueThatJoinsWithoutAGap() throws {
            let music = try TemporaryDirectory()
            defer { music.remove() }
            let script = "#!/bin/sh\nexec cat >> '\(music.path("out.raw"))'\n"
            try script.write(toFile: music.path("capture.sh"), atomically: true, encoding: .utf8)
            let daemon = try DaemonProcess(arguments: [
                "--device", "file:'|sh \(music.path("capture.sh"))',raw",
                "--pace", "--speed", "8", "--config", try config(music),
            ])
            let json = try daemon.connect()
            let socket = daemon.mpdSocketPath
            let parts = try cutWAVs(into: music)
            #expect(try mpc(["add"] + parts, host: socket).status == 0)
            #expect(try mpc(["playlist", "-f", "%file%"], host: socket).output == parts.joined(separator: "\n") + "\n")

            // mpc idle waits for the player to change, and hears the play that follows.
            let (idle, idleOutput) = try startMPC(["idle", "player"], host: socket)
            defer { if idle.isRunning { kill(idle.processIdentifier, SIGKILL) } }
            usleep(200_000)
            let played = try mpc(["play"], host: socket)
            #expect(played.output.contains("[playing] #1/3"), "\(played)")
            _ = try waitForStatus(json, timeout: 20) { $0.name == "ended" }
            idle.waitUntilExit()
            #expect(String(decoding: idleOutput.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self) == "player\n")

            // What mpc queued is what was heard: the parts join into the uncut signal.
            let captured = settledFile(music.path("out.raw"))
            #expect(Data(captured) == (try Fixtures.wavPCM("tone.wav")), "the parts join sample for sample")
            let status = try mpc(["status"], host: socket)
            #expect(!status.output.contains("[playing]"), "\(status)")
        }

        @Test func mpcControlsPlaybackAsTheJSONViewShows() throws {
            let music = try TemporaryDirectory()
            defer { music.remove() }
            let files = try longWAVs(into: music, count: 3, seconds: 30)
            let daemon = try DaemonProcess(arguments: ["--device", "null", "--pace", "--config", try config(music)])
            let json = try daemon.connect()
            let socket = daemon.mpdSocketPath
            func run(_ arguments: String...) throws -> String {
                let result = try mpc(arguments, host: socket)
                #expect(result.status == 0, "mpc \(arguments.joined(separator: " ")): \(result.output)")
                return result.output
            }
            func state() throws -> [String: Any] { try #require(json.call("status").result) }

            _ = try run("add", files[0])
            _ = try run("add", files[1])
            _ = try run("add", files[2])
            let queueIDs = (try json.call("queue").result?["items"] as? [[String: Any]])?.compactMap { $0["id"] as? Int } ?? []
            try #require(queueIDs.count == 3)

            #expect(try run("play").contains("[playing] #1/3"))
            #expect(try state().name == "playing")
            #expect(try run("pause").contains("[paused]"))
            #expect(try state().name == "paused")
            #expect(try run("toggle").contains("[playing]"))
            #expect(try state().name == "playing")
            #expect(try run("next").contains("#2/3"))
            #expect(try state()["current"] as? Int == queueIDs[1])
            #expect(try run("prev").contains("#1/3"))
            #expect(try state()["current"] as? Int == queueIDs[0])
            #expect(try run("seek", "0:20").contains("0:20/0:30"))
            let position = try state()["position"] as? Double ?? 0
            #expect(position >= 20 && position < 21, "\(position)")

            #expect(try run("volume", "40").contains("volume: 40%"))
            #expect(try state()["volume"] as? Int == 40)
            _ = try run("repeat", "on")
            _ = try run("random", "on")
            _ = try run("single", "on")
            _ = try run("consume", "on")
            let options = try #require(json.call("options").result)
            #expect(
                options["repeat"] as? Bool == true && options["random"] as? Bool == true
                    && options["single"] as? Bool == true && options["consume"] as? Bool == true, "\(options)")
            #expect(try run("status").contains("repeat: on    random: on    single: on    consume: on"))
            _ = try run("repeat", "off")
            _ = try run("random", "off")
            _ = try run("single", "off")
            _ = try run("consume", "off")

            // mpc idleloop hears every change until it is stopped.
            let (loop, loopOutput) = try startMPC(["idleloop", "mixer"], host: socket)
            defer { if loop.isRunning { kill(loop.processIdentifier, SIGKILL) } }
            usleep(200_000)
            _ = try run("volume", "20")
            _ = try run("volume", "30")
            usleep(300_000)
            // SIGKILL: the test runner's children may inherit a blocked SIGTERM; mpc flushes each line.
            kill(loop.processIdentifier, SIGKILL)
            loop.waitUntilExit()
            #expect(String(decoding: loopOutput.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self) == "mixer\nmixer\n")

            #expect(try run("current", "-f", "%file%") == files[0] + "\n")
            _ = try run("move", "1", "3")
            #expect(try run("playlist", "-f", "%file%") == [files[1], files[2], files[0]].joined(separator: "\n") + "\n")
            let moved = (try json.call("queue").result?["items"] as? [[String: Any]])?.compactMap { $0["id"] as? Int }
            #expect(moved == [queueIDs[1], queueIDs[2], queueIDs[0]])
            _ = try run("del", "1")
            #expect(try run("playlist", "-f", "%file%") == [files[2], files[0]].joined(separator: "\n") + "\n")
            _ = try run("stop")
            #expect(try state().name == "idle")
            _ = try run("clear")
            #expect((try json.call("queue").result?["items"] as? [Any])?.isEmpty == true)
            #expect(daemon.process.isRunning)
        }

        /// Starts mpc in the background (it waits: idle, idleloop); the caller stops it by its pid.
        private func startMPC(_ arguments: [String], host: String) throws -> (Process, Pipe) {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/mpc")
            process.arguments = arguments
            process.environment = ["MPD_HOST": host]
            let output = Pipe()
            process.standardOutput = output
            try process.run()
            return (process, output)
        }

        @Test func pythonMPD2DrivesItAsHomeAssistantDoes() throws {
            let python = try pythonWithMPD2()
            let music = try TemporaryDirectory()
            defer { music.remove() }
            let files = try longWAVs(into: music, count: 2, seconds: 30)
            try "long1.wav\n".write(toFile: music.path("favourites.m3u"), atomically: true, encoding: .utf8)
            let daemon = try DaemonProcess(arguments: ["--device", "null", "--pace", "--config", try config(music)])
            let json = try daemon.connect()
            let script = Fixtures.directory.deletingLastPathComponent().appendingPathComponent("Scripts/home_assistant_mpd.py").path
            let run = try runTool(python, [script, daemon.mpdSocketPath] + files, timeout: 90)
            try #require(run.status == 0, "\(run.output)\n\(daemon.log)")
            let seen = try #require(JSONSerialization.jsonObject(with: Data(run.output.utf8)) as? [String: Any], "\(run.output)")

            #expect(seen["version"] as? String == "0.23.5")
            #expect((seen["status_before"] as? [String: Any])?["state"] as? String == "stop")
            #expect((seen["outputs"] as? [[String: Any]])?.first?["outputenabled"] as? String == "1")
            #expect((seen["listplaylists"] as? [[String: Any]])?.compactMap { $0["playlist"] as? String } == ["favourites"])
            let playing = try #require(seen["status_playing"] as? [String: Any])
            #expect(playing["state"] as? String == "play" && playing["playlistlength"] as? String == "2", "\(playing)")
            #expect((seen["currentsong"] as? [String: Any])?["file"] as? String == files[0])
            #expect((seen["playlistinfo"] as? [[String: Any]])?.compactMap { $0["file"] as? String } == files)
            #expect(seen["idle"] as? [String] == ["mixer"])
            #expect(seen["volume"] as? String == "35")
            #expect(seen["paused"] as? String == "pause" && seen["resumed"] as? String == "play")
            #expect((seen["after_next"] as? [String: Any])?["song"] as? String == "1")
            #expect((seen["after_previous"] as? [String: Any])?["song"] as? String == "0")
            let elapsed = Double((seen["after_seek"] as? [String: Any])?["elapsed"] as? String ?? "") ?? -1
            #expect(elapsed >= 2 && elapsed < 3, "\(elapsed)")

            // The JSON-RPC side sees what python-mpd2 did.
            let status = try #require(json.call("status").result)
            #expect(status["volume"] as? Int == 35 && status.name == "playing", "\(status)")
        }
    }
}
