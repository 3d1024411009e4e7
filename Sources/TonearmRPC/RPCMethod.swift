import TonearmPlayer
import TonearmProtocol

/// One JSON-RPC method, as `MPDCommand` is one MPD command: its name, who may call it, the
/// params it takes, and its body, which answers at once (on the connection's event loop) or
/// later (from a task, once the engine has acted or the disk was read). `RPCMethods` holds them.
struct RPCMethod: Sendable {
    enum Access: Sendable { case read, control }

    typealias Now = @Sendable (RPCCall) throws -> JSONValue
    typealias Later = @Sendable (RPCCall) async throws -> JSONValue

    enum Body: Sendable {
        case now(Now)
        case later(Later)
        /// Later when `when` says so (the request asks the engine to start something, or
        /// names work for no event loop: a long queue, a file to read), else now.
        case either(when: @Sendable (RPC.Request, Player) -> Bool, now: Now, later: Later)
    }

    let name: String
    let access: Access
    /// The params it takes; any other is `invalidParams`, naming it.
    let params: Set<String>
    let body: Body

    init(_ name: String, _ access: Access, _ params: [String], _ body: Body) {
        self.name = name
        self.access = access
        self.params = Set(params)
        self.body = body
    }

    /// The body that answers `request` at once; nil when it answers later.
    func now(for request: RPC.Request, _ player: Player) -> Now? {
        switch body {
        case .now(let now): now
        case .later: nil
        case .either(let when, let now, _): when(request, player) ? nil : now
        }
    }

    /// The body that answers later; nil for a method that always answers at once.
    var later: Later? {
        switch body {
        case .now: nil
        case .later(let later): later
        case .either(_, _, let later): later
        }
    }
}

/// What a method's body sees: the router (the player, the library, the stored playlists, the
/// source rules), the request with its params, and the client that sent it.
struct RPCCall: Sendable {
    let router: RequestRouter
    let request: RPC.Request
    let params: Params
    let session: ClientSession

    init(router: RequestRouter, request: RPC.Request, session: ClientSession) {
        self.router = router
        self.request = request
        params = Params(request.params, method: request.method)
        self.session = session
    }

    var player: Player { router.player }
}
