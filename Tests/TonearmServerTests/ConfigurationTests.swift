import Foundation
import Testing
import TonearmEngine
import TonearmMedia
import TonearmTestSupport

@testable import TonearmProtocol
@testable import TonearmServer

@Suite("Configuration and socket path", .timeLimit(.minutes(1)))
struct ConfigurationTests {
    private static let documented = Fixtures.directory.deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("config/tonearmd.toml").path

    @Test func embeddedDefaultIsTheDocumentedFile() throws {
        let file = try String(contentsOfFile: Self.documented, encoding: .utf8)
        #expect(file == DaemonConfiguration.embeddedDefaultTOML, "the built-in default is config/tonearmd.toml, built in")
        let parsed = try DaemonConfiguration().applying(tomlFile: Self.documented)
        #expect(parsed == DaemonConfiguration.embeddedDefault())
        #expect(parsed.output == OutputConfiguration(device: "default", bufferMilliseconds: 200, pace: false, speed: 1))
        #expect(parsed.socket == nil && parsed.logLevel == .info)
    }

    /// A config file that holds a password and that every user may read is warned about.
    @Test func aPasswordInAFileOthersReadIsWarnedAbout() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = directory.path("tonearmd.toml")
        try "[mpd]\npassword = \"hunter2\"\n".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(chmod(path, 0o644) == 0)
        let warning = try #require(DaemonConfiguration.passwordExposure(configFile: path))
        #expect(warning.contains("mpd.password") && warning.contains("644") && !warning.contains("hunter2"), "\(warning)")
        #expect(chmod(path, 0o640) == 0)
        #expect(DaemonConfiguration.passwordExposure(configFile: path) == nil, "only its owner and group read it")
        try "[http]\npassword = \"\"\n".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(chmod(path, 0o644) == 0)
        #expect(DaemonConfiguration.passwordExposure(configFile: path) == nil, "no password in it")
    }

    @Test func fileThenEnvironmentOverride() throws {
        let config = try DaemonConfiguration.embeddedDefault().applying(
            toml: """
                socket = "/tmp/a.sock"
                [output]
                device = "null"
                sample_rate = 48000
                format = "s32"
                pace = true
                """, source: "test"
        ).applying(environment: ["TONEARM_DEVICE": "hw:1,0", "TONEARM_SPEED": "2.5"])
        #expect(config.socket == "/tmp/a.sock")
        #expect(config.output.device == "hw:1,0" && config.output.speed == 2.5 && config.output.pace)
        #expect(config.output.sampleRate == 48000 && config.output.sampleType == .s32 && config.output.channels == nil)
    }

    @Test(arguments: [
        "nonsense = 1", "[output]\nspeed = -1", "[output]\nformat = \"s24\"", "[log]\nlevel = \"loud\"",
        "[output]\nchannels = 99", "socket = 3", "[output\n", "[output]\nkind = \"pulse\"",
        "[snapcast]\nsource = \"localhost\"", "[snapcast]\nformat = \"48000:24:2\"", "[snapcast]\nport = 1",
        "[input]\nprotocols = [\"ftp\"]", "[input]\nprebuffer_ms = -1", "[input]\ntimeout_ms = 0",
        "[output]\nrelease_after_s = -2", "[output]\nrelease_after_s = \"soon\"", "[output]\non_open = \"amp on\"",
        "[output]\non_close = [\"amp\", 1]", "[output]\non_open = [\"\"]", "[output]\nhook_timeout_ms = 0",
        "crossfade = 3", "[crossfade]\nskip_same_album = 1", "[crossfade]\nseconds = 3",
        "[crossfade]\nmanual_ms = 5001", "[crossfade]\nmanual_ms = 0.5", "[output]\nfade_on_pause = 1",
        "announce = 50", "[announce]\nduck_level = 101", "[announce]\nduck_level = -1", "[announce]\nlevel = 50",
    ])
    func invalidConfigIsRefusedWithAReason(_ text: String) {
        #expect(throws: DaemonConfiguration.Invalid.self) { try DaemonConfiguration().applying(toml: text, source: "t") }
    }

    @Test func releaseAndHooks() throws {
        let config = try DaemonConfiguration().applying(
            toml: """
                [output]
                release_after_s = 2.5
                on_open = ["/usr/local/bin/amp", "on"]
                on_close = ["cec-client", "-s"]
                hook_timeout_ms = 800
                """, source: "t")
        #expect(config.output.releaseAfterSeconds == 2.5 && config.output.hookTimeoutMilliseconds == 800)
        #expect(config.output.onOpen == ["/usr/local/bin/amp", "on"] && config.output.onClose == ["cec-client", "-s"])
        let kept = try DaemonConfiguration().applying(toml: "[output]\nrelease_after_s = -1", source: "t")
        #expect(kept.output.releaseAfterSeconds == nil)
        #expect(DaemonConfiguration.embeddedDefault().output.releaseAfterSeconds == 10)
    }

    @Test func crossfadeSettings() throws {
        #expect(DaemonConfiguration.embeddedDefault().crossfade.skipSameAlbum)
        #expect(DaemonConfiguration.embeddedDefault().crossfade.manualSeconds == 0.3)
        let config = try DaemonConfiguration().applying(toml: "[crossfade]\nskip_same_album = false\nmanual_ms = 0", source: "t")
        #expect(!config.crossfade.skipSameAlbum && config.crossfade.manualSeconds == 0)
    }

    @Test func pauseFadesAndDucking() throws {
        let defaults = DaemonConfiguration.embeddedDefault()
        #expect(defaults.output.fadesOnPause && defaults.announcements.duckLevel == 50)
        let config = try DaemonConfiguration().applying(toml: "[output]\nfade_on_pause = false\n[announce]\nduck_level = 20", source: "t")
        #expect(!config.output.fadesOnPause && config.announcements.duckLevel == 20)
    }

    @Test func snapcastOutputAndNetworkInput() throws {
        let config = try DaemonConfiguration().applying(
            toml: """
                [output]
                kind = "snapcast"
                [snapcast]
                source = "127.0.0.1:4953"
                format = "44100:32:2"
                [input]
                protocols = ["file", "HTTP"]
                prebuffer_ms = 2500
                reconnect_for_s = 0
                """, source: "t")
        let output = config.engineOutput
        #expect(
            output.sink == .snapcast(host: "127.0.0.1", port: 4953, format: PCMFormat(sampleType: .s32, sampleRate: 44100, channels: 2)))
        #expect(output.pace, "Tonearm keeps real time for Snapcast")
        #expect(output.device == "snapcast:127.0.0.1:4953")
        #expect(
            config.input.protocols == ["file", "http"] && config.input.prebufferSeconds == 2.5 && config.input.reconnectForSeconds == 0)
        #expect(DaemonConfiguration.embeddedDefault().engineOutput.sink == .alsa)
    }

    @Test func socketPathRule() {
        #expect(SocketPath.resolve(explicit: "/a", environment: ["TONEARM_SOCKET": "/b"], configured: "/c") == "/a")
        #expect(SocketPath.resolve(explicit: nil, environment: ["TONEARM_SOCKET": "/b"], configured: "/c") == "/b")
        #expect(SocketPath.resolve(explicit: nil, environment: [:], configured: "/c") == "/c")
        #expect(
            SocketPath.resolve(explicit: nil, environment: ["XDG_RUNTIME_DIR": "/run/user/1000"], configured: nil, userID: 1000)
                == "/run/user/1000/tonearm/tonearm.sock")
        #expect(
            SocketPath.resolve(explicit: nil, environment: ["XDG_RUNTIME_DIR": "/run/user/0"], configured: nil, userID: 0)
                == "/run/tonearm/tonearm.sock")
    }
}
