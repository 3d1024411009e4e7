import Foundation

/// The fault-injecting ALSA test device (Tests/FaultDevice/tonearm_fault_pcm.c), set up for one
/// test in its own directory: an ALSA config naming the plugin, a control file and a recording.
/// Give `environment` to the daemon and open `name` as its device.
package struct FaultDevice: Sendable {
    package let directory: TemporaryDirectory
    package let configPath: String
    package let controlPath: String
    package let recordPath: String
    /// The PCM name the config defines.
    package let name = "fault"

    /// The root of the package (Tests/Fixtures/../..).
    static let packageRoot = Fixtures.directory.deletingLastPathComponent().deletingLastPathComponent()

    /// Builds the plugin once per test run (`make fault-device`: it rebuilds only when the source changed).
    static let library: Result<String, LineClient.Failure> = {
        let make = Process()
        make.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        make.arguments = ["make", "-s", "-C", packageRoot.path, "fault-device"]
        let output = Pipe()
        make.standardOutput = output
        make.standardError = output
        do { try make.run() } catch { return .failure(LineClient.Failure(description: "cannot run make: \(error)")) }
        let log = output.fileHandleForReading.readDataToEndOfFile()
        make.waitUntilExit()
        guard make.terminationStatus == 0 else {
            return .failure(LineClient.Failure(description: "make fault-device failed: \(String(decoding: log, as: UTF8.self))"))
        }
        return .success(packageRoot.appendingPathComponent(".build/fault-device/libasound_module_pcm_tonearmfault.so").path)
    }()

    /// - Parameters:
    ///   - speed: the device plays at real time × speed.
    ///   - canPause: false hides `snd_pcm_pause`, like devices that cannot pause.
    ///   - control: the control file's commands, e.g. ["vanish_after 44100"].
    package init(speed: Double = 4, canPause: Bool = true, control: [String] = []) throws {
        let library = try Self.library.get()
        directory = try TemporaryDirectory()
        configPath = directory.path("asound.conf")
        controlPath = directory.path("control")
        recordPath = directory.path("received.raw")
        let config = """
            pcm_type.tonearmfault { lib "\(library)" }
            pcm.\(name) { type tonearmfault control "\(controlPath)" record "\(recordPath)" speed \(speed) pause \(canPause) }

            """
        try Data(config.utf8).write(to: URL(fileURLWithPath: configPath))
        try setControl(control)
    }

    /// Replaces the control file; the device reads it at its next open.
    package func setControl(_ lines: [String]) throws {
        try Data(lines.map { $0 + "\n" }.joined().utf8).write(to: URL(fileURLWithPath: controlPath))
    }

    package var unplugPath: String { controlPath + ".unplugged" }
    package var isUnplugged: Bool { FileManager.default.fileExists(atPath: unplugPath) }

    /// Pulls the plug now: every call on the open device fails with ENODEV, and opening fails.
    package func unplug() { _ = FileManager.default.createFile(atPath: unplugPath, contents: nil) }
    package func plugBack() { try? FileManager.default.removeItem(atPath: unplugPath) }

    /// What the device received, across every open.
    package func received() throws -> Data {
        FileManager.default.fileExists(atPath: recordPath) ? try Data(contentsOf: URL(fileURLWithPath: recordPath)) : Data()
    }

    /// The environment that makes a process find the device (ALSA reads only this config).
    package var environment: [String: String] { ["ALSA_CONFIG_PATH": configPath] }

    package func remove() { directory.remove() }
}
