import Foundation
import Testing
import TonearmEngine
import TonearmTestSupport
@testable import TonearmServer

@Suite("Configuration and socket path", .timeLimit(.minutes(1)))
struct ConfigurationTests {
    private static let documented = Fixtures.directory.deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("config/tonearmd.toml").path

    @Test func embeddedDefaultIsTheDocumentedFile() throws {
        let file = try String(contentsOfFile: Self.documented, encoding: .utf8)
        #expect(file == embeddedDefaultTOML, "config/tonearmd.toml and EmbeddedDefaultConfig.swift must say the same")
        let parsed = try DaemonConfiguration().applying(tomlFile: Self.documented)
        #expect(parsed == DaemonConfiguration.embeddedDefault())
        #expect(parsed.output == OutputConfiguration(device: "default", bufferMilliseconds: 200, pace: false, speed: 1))
        #expect(parsed.socket == nil && parsed.logLevel == .info)
    }

    @Test func fileThenEnvironmentOverride() throws {
        let config = try DaemonConfiguration.embeddedDefault().applying(toml: """
            socket = "/tmp/a.sock"
            [output]
            device = "null"
            sample_rate = 48000
            format = "s32"
            pace = true
            """, source: "test").applying(environment: ["TONEARM_DEVICE": "hw:1,0", "TONEARM_SPEED": "2.5"])
        #expect(config.socket == "/tmp/a.sock")
        #expect(config.output.device == "hw:1,0" && config.output.speed == 2.5 && config.output.pace)
        #expect(config.output.sampleRate == 48000 && config.output.sampleType == .s32 && config.output.channels == nil)
    }

    @Test(arguments: ["nonsense = 1", "[output]\nspeed = -1", "[output]\nformat = \"s24\"", "[log]\nlevel = \"loud\"",
                      "[output]\nchannels = 99", "socket = 3", "[output\n"])
    func invalidConfigIsRefusedWithAReason(_ text: String) {
        #expect(throws: DaemonConfiguration.Invalid.self) { try DaemonConfiguration().applying(toml: text, source: "t") }
    }

    @Test func socketPathRule() {
        #expect(SocketPath.resolve(explicit: "/a", environment: ["TONEARM_SOCKET": "/b"], configured: "/c") == "/a")
        #expect(SocketPath.resolve(explicit: nil, environment: ["TONEARM_SOCKET": "/b"], configured: "/c") == "/b")
        #expect(SocketPath.resolve(explicit: nil, environment: [:], configured: "/c") == "/c")
        #expect(SocketPath.resolve(explicit: nil, environment: ["XDG_RUNTIME_DIR": "/run/user/1000"], configured: nil, userID: 1000)
                == "/run/user/1000/tonearm/tonearm.sock")
        #expect(SocketPath.resolve(explicit: nil, environment: ["XDG_RUNTIME_DIR": "/run/user/0"], configured: nil, userID: 0)
                == "/run/tonearm/tonearm.sock")
    }
}
