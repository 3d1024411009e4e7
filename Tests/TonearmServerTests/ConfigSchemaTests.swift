import Foundation
import Testing
import TonearmTestSupport

@testable import TonearmServer

/// The config's keys are declared once (`ConfigSchema`); what else names them (the documented
/// file, the environment, the flags) is held to the same keys here.
@Suite("The config schema and what names its keys", .timeLimit(.minutes(1)))
struct ConfigSchemaTests {
    private static let repository = Fixtures.directory.deletingLastPathComponent().deletingLastPathComponent()

    /// The keys config/tonearmd.toml documents, set or commented out: `key = ...` or
    /// `# key = ...` lines, under their `[section]`.
    static func documentedKeys() throws -> Set<String> {
        let text = try String(contentsOf: repository.appendingPathComponent("config/tonearmd.toml"), encoding: .utf8)
        var section: String?
        var keys = Set<String>()
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("["), let end = line.firstIndex(of: "]") {
                section = String(line[line.index(after: line.startIndex)..<end])
                continue
            }
            let body = line.hasPrefix("# ") ? line.dropFirst(2) : line[...]
            guard let equals = body.range(of: " = ") else { continue }
            let key = body[..<equals.lowerBound]
            guard !key.isEmpty, key.allSatisfy({ $0.isLowercase || $0 == "_" }) else { continue }
            keys.insert(section.map { "\($0).\(key)" } ?? String(key))
        }
        return keys
    }

    @Test func theDocumentedFileDocumentsEveryKeyAndNoOther() throws {
        let declared = Set(ConfigSchema.keys.map(\.name)).subtracting(["mpd.music_directory"])  // moved; still read
        let documented = try Self.documentedKeys()
        #expect(documented.subtracting(declared).isEmpty, "documented, not declared: \(documented.subtracting(declared).sorted())")
        #expect(declared.subtracting(documented).isEmpty, "declared, not documented: \(declared.subtracting(documented).sorted())")
        #expect(
            Set(ConfigSchema.keys.map { $0.name.split(separator: ".").first.map(String.init)! }).subtracting(["socket"])
                == Set(ConfigSchema.sections))
    }

    @Test func keysAreDeclaredOnce() {
        let names = ConfigSchema.keys.map(\.name)
        #expect(Set(names).count == names.count)
    }

    /// Each variable the schema names sets what its key sets, and the environment reads no other.
    @Test func theEnvironmentSetsWhatItsKeysSet() throws {
        let samples: [String: (environment: String, toml: String)] = [
            "TONEARM_SOCKET": ("/tmp/x.sock", "\"/tmp/x.sock\""), "TONEARM_DEVICE": ("null", "\"null\""),
            "TONEARM_PACE": ("true", "true"), "TONEARM_SPEED": ("2", "2.0"), "TONEARM_BUFFER_MS": ("300", "300"),
            "TONEARM_LOG_LEVEL": ("debug", "\"debug\""),
        ]
        let declared = ConfigSchema.keys.compactMap { key in key.environment.map { ($0, key.name) } }
        #expect(Set(declared.map(\.0)) == Set(samples.keys))
        for (variable, name) in declared {
            let sample = try #require(samples[variable])
            let parts = name.split(separator: ".")
            let toml = parts.count == 2 ? "[\(parts[0])]\n\(parts[1]) = \(sample.toml)" : "\(name) = \(sample.toml)"
            let fromEnvironment = try DaemonConfiguration().applying(environment: [variable: sample.environment])
            let fromFile = try DaemonConfiguration().applying(toml: toml, source: "test")
            #expect(fromEnvironment == fromFile, "\(variable) and \(name)")
            #expect(fromEnvironment != DaemonConfiguration(), "\(variable) changed nothing")
        }
        // What `applying(environment:)` reads, as its source says.
        let source = try String(
            contentsOf: Self.repository.appendingPathComponent("Sources/TonearmServer/DaemonConfiguration.swift"), encoding: .utf8)
        let read = Set(
            source.components(separatedBy: "environment[\"").dropFirst().compactMap { $0.split(separator: "\"").first.map(String.init) })
        #expect(read == Set(samples.keys))
    }

    /// Each flag the schema names is one of tonearmd's, and each of tonearmd's flags that sets a
    /// key is in the schema.
    @Test func theFlagsAreTheSchemas() throws {
        let help = try runTool(DaemonProcess.binary(), ["--help"])
        let flags = Set(
            help.output.components(separatedBy: CharacterSet.whitespacesAndNewlines.union(CharacterSet(charactersIn: "/,[]")))
                .filter { $0.hasPrefix("--") }.map { $0.replacingOccurrences(of: "--no-", with: "--") })
        let declared = Set(ConfigSchema.keys.compactMap(\.flag))
        #expect(declared.subtracting(flags).isEmpty, "declared, not tonearmd's: \(declared.subtracting(flags).sorted())")
        // Flags that set no key: which file to read, and the help itself.
        let others = flags.subtracting(declared).subtracting(["--config", "--help", "--version"])
        #expect(others.isEmpty, "tonearmd's flags not in the schema: \(others.sorted())")
    }
}
