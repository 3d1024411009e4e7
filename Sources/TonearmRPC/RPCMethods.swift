/// Every JSON-RPC method, one declaration each (docs/protocol.md documents each; a test holds
/// the two to the same names). The declarations are in the areas' files.
enum RPCMethods {
    static let all: [RPCMethod] = playback + queue + home + library + playlists + about

    static let table: [String: RPCMethod] = Dictionary(uniqueKeysWithValues: all.map { ($0.name, $0) })
    static let names: [String] = all.map(\.name)
    /// Methods a `read` client may call (`AccessPolicy.Level.read`).
    static let readNames: Set<String> = Set(all.filter { $0.access == .read }.map(\.name))
}
