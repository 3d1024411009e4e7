import Foundation

/// The renderer's lasting identity, kept in the state directory (`upnp.json`): its UDN, the same
/// across restarts so that control points keep knowing it, and SSDP's BOOTID, one more at each start.
struct RendererIdentity: Codable, Sendable, Equatable {
    var udn: String
    var bootID: Int

    /// Reads (or makes) the identity in `directory` and counts this start; an unreadable file
    /// gets a new identity rather than stopping the daemon.
    static func load(directory: String) -> RendererIdentity {
        let path = directory + "/upnp.json"
        var identity = RendererIdentity(udn: "uuid:" + UUID().uuidString.lowercased(), bootID: 0)
        if let data = FileManager.default.contents(atPath: path),
            let stored = try? JSONDecoder().decode(RendererIdentity.self, from: data), stored.udn.hasPrefix("uuid:"),
            stored.udn.count <= 80, stored.bootID >= 0, stored.bootID < Int32.max
        {
            identity = stored
        }
        identity.bootID += 1
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        if let data = try? JSONEncoder().encode(identity) {
            let temporary = path + ".tmp"
            if FileManager.default.createFile(atPath: temporary, contents: data, attributes: [.posixPermissions: 0o600]) {
                _ = rename(temporary, path)
            }
        }
        return identity
    }
}
