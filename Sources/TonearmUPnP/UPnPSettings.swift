import Foundation

/// The renderer's settings (`[upnp]`).
package struct UPnPSettings: Sendable, Equatable {
    /// Off by default: UPnP has no authentication, so anyone on the network may cast.
    package var enabled = false
    /// The friendly name; nil: "Tonearm on HOSTNAME".
    package var name: String?
    /// Interface names to serve on; nil: every IPv4 interface that is up, loopback aside.
    package var interfaces: [String]?
    /// The description, control and event port (0: any free one, the same on every interface).
    package var port = 0
    /// A cast no control point touched (no action, no subscription) for this long ends.
    package var releaseAfterSeconds: Double = 600
    /// What a cast may open.
    package var protocols = ["http", "https"]
    /// SSDP's port: 1900 on a real network; tests give each daemon one of its own.
    package var ssdpPort = 1900
    /// Event subscriptions at once (each costs a little memory and a NOTIFY per change).
    package var maxSubscribers = 32

    package init() {}

    package var friendlyName: String {
        if let name, !name.isEmpty { return name }
        // gethostname, not ProcessInfo.hostName: that one may ask DNS, and the start would wait.
        var buffer = [CChar](repeating: 0, count: 256)
        let host = gethostname(&buffer, buffer.count - 1) == 0 ? String(cString: buffer) : "localhost"
        return "Tonearm on \(host.split(separator: ".").first.map(String.init) ?? host)"
    }

    /// How long SSDP's announcements hold (CACHE-CONTROL max-age); re-announced at half of it.
    static let maxAge = 1800
}
