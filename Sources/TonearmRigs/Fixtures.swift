import Foundation

/// The sample media under Tests/Fixtures (made by scripts/make-fixtures.sh).
package enum Fixtures {
    package static let directory = URL(fileURLWithPath: #filePath)  // Sources/TonearmRigs/Fixtures.swift
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Tests/Fixtures")

    package static func url(_ name: String) -> URL { directory.appendingPathComponent(name) }
    package static func path(_ name: String) -> String { url(name).path }

    /// The PCM bytes of a WAV file's `data` chunk, found by walking the RIFF chunks.
    package static func wavPCM(_ name: String) throws -> Data {
        let data = try Data(contentsOf: url(name))
        var offset = 12
        while offset + 8 <= data.count {
            let id = String(decoding: data[offset..<offset + 4], as: UTF8.self)
            let size = Int(data[offset + 4]) | Int(data[offset + 5]) << 8 | Int(data[offset + 6]) << 16 | Int(data[offset + 7]) << 24
            if id == "data" { return data.subdata(in: offset + 8..<min(offset + 8 + size, data.count)) }
            offset += 8 + size + (size & 1)
        }
        throw CocoaError(.fileReadCorruptFile)
    }
}

/// A fresh directory for one test's output files, removed by `remove()`.
package struct TemporaryDirectory: Sendable {
    package let url: URL

    package init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("tonearm-test-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    package func path(_ name: String) -> String { url.appendingPathComponent(name).path }
    package func remove() { try? FileManager.default.removeItem(at: url) }

    /// The ALSA device that writes exactly the PCM it receives to `name` in this directory.
    package func fileDevice(_ name: String) -> String { "file:'\(path(name))',raw" }
}

/// Polls `condition` until it holds or `timeout` passes (tests only; the daemon never polls).
package func eventually(timeout: Double = 10, _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return try await condition()
}
