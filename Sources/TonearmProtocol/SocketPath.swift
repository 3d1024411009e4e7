import Foundation

/// Where the control socket lives: the first of an explicit path (--socket), TONEARM_SOCKET,
/// the config's `socket`, then `$XDG_RUNTIME_DIR/tonearm/tonearm.sock` for a user or
/// `/run/tonearm/tonearm.sock` for root. Daemon and client resolve it the same way.
package enum SocketPath {
    package static func resolve(
        explicit: String?, environment: [String: String], configured: String?,
        userID: UInt32 = getuid()
    ) -> String {
        if let explicit, !explicit.isEmpty { return explicit }
        if let fromEnvironment = environment["TONEARM_SOCKET"], !fromEnvironment.isEmpty { return fromEnvironment }
        if let configured, !configured.isEmpty { return configured }
        if userID == 0 { return "/run/tonearm/tonearm.sock" }
        if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty { return runtime + "/tonearm/tonearm.sock" }
        return "/tmp/tonearm-\(userID)/tonearm.sock"
    }
}
