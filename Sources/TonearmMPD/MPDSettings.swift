import Foundation
import TonearmFrontEnd

/// The MPD front-end's settings (`[mpd]`).
package struct MPDSettings: Sendable, Equatable {
    package var enabled = true
    /// MPD's Unix socket; nil: `mpd.sock` beside the control socket.
    package var socket: String?
    /// A listening socket systemd passed for MPD (`FileDescriptorName=mpd`), served instead of `socket`.
    package var inherited: CInt?
    /// A TCP address to listen on as well (`mpd.bind`, "127.0.0.1:6600"); nil: none.
    package var bind: TCPAddress?
    /// With a password, a client may do nothing but `password`, `ping`, `close`, `commands` and
    /// `notcommands` until it sends it (MPD's rule).
    package var password: String?
    package var maxClients = 256
    package var limits = ClientLimits()

    package init() {}

    package typealias TCPAddress = TonearmFrontEnd.TCPAddress

    /// The Unix socket's path for a control socket at `controlSocket`.
    package func socketPath(beside controlSocket: String) -> String {
        if let socket { return socket }
        let directory = (controlSocket as NSString).deletingLastPathComponent
        return (directory.isEmpty ? "" : directory + "/") + "mpd.sock"
    }

    /// Why these settings may not be used with `security`, or nil. A TCP port reachable from other
    /// machines, or one that would let any local user past the control access lists, needs a
    /// password.
    package func refusal(with security: ControlSecurity) -> String? {
        guard enabled, let bind, password == nil else { return nil }
        if !bind.isLoopback {
            return "mpd.bind = \"\(bind)\" accepts clients from other machines; set mpd.password as well, or bind to 127.0.0.1"
        }
        if !security.policy.isOpen {
            return "mpd.bind = \"\(bind)\" would let every local user past control.allow_uids/allow_gids/read_gids "
                + "(TCP peers have no credentials); set mpd.password as well"
        }
        return nil
    }
}
