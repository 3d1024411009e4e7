import Foundation
import NIOCore

#if canImport(Glibc)
    import Glibc
#endif

/// Who may do what on the control socket (`control.allow_uids`, `allow_gids`, `read_gids`), from
/// the peer's credentials (`SO_PEERCRED`). With no list set, everyone who can open the socket may
/// control, as the socket's mode and group decide. Root and the daemon's own user always may.
/// A pure value: the decision is a function of the credentials, table-tested.
package struct AccessPolicy: Sendable, Equatable {
    package var allowUIDs: Set<UInt32> = []
    package var allowGIDs: Set<UInt32> = []
    package var readGIDs: Set<UInt32> = []

    package init(allowUIDs: Set<UInt32> = [], allowGIDs: Set<UInt32> = [], readGIDs: Set<UInt32> = []) {
        self.allowUIDs = allowUIDs
        self.allowGIDs = allowGIDs
        self.readGIDs = readGIDs
    }

    package enum Level: String, Sendable, Equatable {
        /// Every method.
        case control
        /// `status`, `queue`, `subscribe`, `ping`, `version` only.
        case read
        /// Refused and disconnected.
        case none
    }

    /// No list set: the socket's permissions alone decide.
    package var isOpen: Bool { allowUIDs.isEmpty && allowGIDs.isEmpty && readGIDs.isEmpty }

    /// - Parameter groups: the peer's primary and supplementary groups (those that could be read).
    package func level(uid: UInt32, groups: Set<UInt32>, daemonUID: UInt32) -> Level {
        if isOpen || uid == 0 || uid == daemonUID || allowUIDs.contains(uid) || !groups.isDisjoint(with: allowGIDs) {
            return .control
        }
        return groups.isDisjoint(with: readGIDs) ? .none : .read
    }
}

/// Who may reach the daemon and what it may open: the socket's mode and group, the peer policy,
/// the media roots (the config's `control.socket_mode`, `socket_group`, `allow_*`, `read_gids`,
/// and `input.roots`).
package struct ControlSecurity: Sendable, Equatable {
    /// Permissions of a socket the daemon creates (not of one systemd passes).
    package var socketMode: UInt16 = 0o660
    /// Group of a socket the daemon creates; nil: the daemon's group.
    package var socketGroup: UInt32?
    package var policy = AccessPolicy()
    package var roots = MediaRoots([])

    package init() {}
}

/// A connected peer, as the kernel reports it.
/// Who is on the other end of a connection: its credentials (a Unix socket's; none over TCP),
/// and how the log names it ("uid=… pid=…", or the TCP address).
package struct ClientPeer: Sendable, CustomStringConvertible {
    package let credentials: PeerCredentials?
    package let description: String

    package init(credentials: PeerCredentials?, description: String) {
        self.credentials = credentials
        self.description = description
    }

    /// Whether this peer could read a file itself, MPD's rule for a file a client names: it is
    /// root or the daemon's user, or owns the file, or the file is readable by all. A peer with
    /// no credentials (TCP) only the last.
    func couldRead(owner: UInt32, mode: UInt32) -> Bool {
        if mode & UInt32(S_IROTH) != 0 { return true }
        guard let uid = credentials?.uid else { return false }
        return uid == 0 || uid == getuid() || uid == owner
    }
}

package struct PeerCredentials: Sendable, Equatable {
    package let pid: Int32
    package let uid: UInt32
    package let gid: UInt32

    /// The peer's groups: its primary group and, when its /proc entry can be read, the
    /// supplementary ones (`Groups:`). Under `ProtectProc=invisible` only the primary is seen.
    package var groups: Set<UInt32> {
        var groups: Set<UInt32> = [gid]
        if let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Groups:") })
        {
            for field in line.dropFirst("Groups:".count).split(whereSeparator: { $0 == " " || $0 == "\t" }) {
                if let group = UInt32(field) { groups.insert(group) }
            }
        }
        return groups
    }
}

extension PeerCredentials {
    /// The peer of a Unix-socket connection (`SO_PEERCRED`); nil when the kernel does not say.
    static func of(_ channel: any Channel) -> EventLoopFuture<PeerCredentials?> {
        guard let provider = channel as? SocketOptionProvider else { return channel.eventLoop.makeSucceededFuture(nil) }
        let future: EventLoopFuture<KernelUcred> = provider.unsafeGetSocketOption(
            level: SocketOptionLevel(SOL_SOCKET),
            name: SocketOptionName(SO_PEERCRED))
        return future.map { Optional(PeerCredentials(pid: $0.pid, uid: $0.uid, gid: $0.gid)) }
            .recover { _ in Optional<PeerCredentials>.none }
    }
}

/// Linux's `struct ucred` (pid, uid, gid: three 32-bit fields), which Glibc shows Swift only with
/// _GNU_SOURCE. Same size and layout, so the kernel can fill it.
private struct KernelUcred: Sendable {
    var pid: Int32 = 0
    var uid: UInt32 = 0
    var gid: UInt32 = 0
}
