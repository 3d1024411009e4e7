import TonearmFrontEnd

/// The web remote's settings (`[http]`).
public struct WebSettings: Sendable, Equatable {
    public var enabled = true
    public var bind = TCPAddress("127.0.0.1:6680")!
    /// With a password, the page asks for it once and keeps a token (an HttpOnly cookie); the
    /// WebSocket and covers need the token.
    public var password: String?
    /// Connections at once (pages, their WebSockets, image requests); one more gets a 503.
    public var maxClients = 64

    public init() {}

    /// Why these settings may not be used, or nil: a page other machines can reach, open to
    /// anyone on the network, needs a password.
    public var refusal: String? {
        guard enabled, password == nil, !bind.isLoopback else { return nil }
        return "http.bind = \"\(bind)\" serves the web remote to other machines; set http.password as well, or bind to 127.0.0.1"
    }
}
