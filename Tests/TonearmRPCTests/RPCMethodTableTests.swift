import Foundation
import Testing
import TonearmProtocol
import TonearmTestSupport

@testable import TonearmRPC

/// The JSON-RPC method table is the one place a method is declared: each is documented in
/// docs/protocol.md's method table, and the read-only list is the table's.
@Suite("JSON-RPC method table", .timeLimit(.minutes(1)))
struct RPCMethodTableTests {
    @Test func everyMethodIsDocumented() throws {
        let page = try String(
            contentsOf: Fixtures.directory.deletingLastPathComponent().deletingLastPathComponent()
                .appendingPathComponent("docs/protocol.md"), encoding: .utf8)
        // The method table's rows: "| `name` | params | answer |", up to the first blank line after it.
        let lines = page.components(separatedBy: "\n")
        let start = try #require(lines.firstIndex { $0.hasPrefix("| `load` |") })
        let rows = lines[start...].prefix { $0.hasPrefix("| `") }
        let documented = rows.compactMap { $0.split(separator: "`").dropFirst().first.map(String.init) }
        #expect(Set(documented) == Set(RPCMethods.names), "documented \(documented), table \(RPCMethods.names)")
        #expect(RPCMethods.table.count == RPCMethods.all.count, "no name twice")
    }

    @Test func readOnlyClientsMayCallExactlyTheReadMethods() {
        #expect(
            RPCMethods.readNames == [
                "status", "queue", "loudness", "subscribe", "ping", "version", "library.stats", "library.browse",
                "library.search", "library.list", "library.art", "playlist.list", "alarms.list",
            ])
    }
}
