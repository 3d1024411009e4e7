/// The connection's stages, in the order it goes through them; while open (before and after
/// a half-close), with what is being done with the line in hand.
enum RequestPathState: Equatable {
    /// In the pipeline; the session starts once the channel is active.
    case added
    /// Serving lines as they come.
    case open(RequestPathLine)
    /// The client half-closed: the lines read are served, then it closes (`closeIfDone`).
    case inputClosed(RequestPathLine)
    /// The session asked to close while output was held until durable: it closes once
    /// that is written (`durable`). Nothing more is served.
    case closingAfterHeld
    /// Closing or closed: nothing more is served or written.
    case closing

    /// Its place in the order of stages: a connection never goes back.
    var rank: Int {
        switch self {
        case .added: 0
        case .open: 1
        case .inputClosed: 2
        case .closingAfterHeld: 3
        case .closing: 4
        }
    }
}

/// What an open connection is doing with its lines.
enum RequestPathLine: Equatable {
    /// Waiting for the client: a reply written now goes out at once.
    case idle
    /// Inside a read burst: replies are gathered and written once it is done, so a client
    /// that sends many commands at once costs one write, and the channel holds one buffer for
    /// them, not one per reply (a million unread `OK`s were 70 MiB of entries).
    case reading
    /// A served line's reply comes later (`.waiting`): nothing else is served or read.
    case awaitingReply
}
