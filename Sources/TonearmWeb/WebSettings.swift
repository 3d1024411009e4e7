import TonearmFrontEnd

/// The web remote's settings (`[http]`).
package struct WebSettings: Sendable, Equatable {
    package var enabled = true
    package var bind = TCPAddress("127.0.0.1:6680")!
    /// With a password, the page asks for it once and keeps a token (an HttpOnly cookie); the
    /// WebSocket and covers need the token.
    package var password: String?
    /// A second password that gives only read access (status, the queue, the library, events):
    /// the web's `control.read_gids`.
    package var readPassword: String?
    /// Names besides the bind address, `localhost` and the box's own host names by which pages
    /// may reach the server (a name in DNS or in /etc/hosts). Any other `Host` is refused: a page
    /// of another site whose name was made to point here (DNS rebinding) cannot act.
    package var allowedHosts: [String] = []
    /// Connections at once (pages, their WebSockets, image requests); one more gets a 503.
    package var maxClients = 64

    package init() {}

    /// Why these settings may not be used, or nil. A page other machines can reach, open to
    /// anyone on the network, needs a password; so does one that would let every local user
    /// past the control socket's access lists or MPD's password (a browser has no credentials).
    package func refusal(with security: ControlSecurity, mpdPassword: String?) -> String? {
        guard enabled else { return nil }
        if password == nil, readPassword != nil {
            return "http.read_password is set without http.password: set both (the password controls, the read password only reads)"
        }
        if let password, password == readPassword {
            return "http.read_password is the same as http.password: a read-only password must differ"
        }
        guard password == nil else { return nil }
        if !bind.isLoopback {
            return "http.bind = \"\(bind)\" serves the web remote to other machines; set http.password as well, or bind to 127.0.0.1"
        }
        if !security.policy.isOpen {
            return "the web remote (http.bind = \"\(bind)\") would let every local user past control.allow_uids/allow_gids/read_gids "
                + "(a browser has no credentials); set http.password as well, or http.enabled = false"
        }
        if mpdPassword != nil {
            return "the web remote (http.bind = \"\(bind)\") would let every local user past mpd.password; "
                + "set http.password as well, or http.enabled = false"
        }
        return nil
    }
}
