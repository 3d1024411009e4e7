/// Why the player opens a queue item, which decides how: whether a failure answers the
/// command or is skipped (the queue goes on), whether it plays once ready, and the reason its
/// `item` event gives.
enum OpenCause: Equatable {
    /// `load`: the queue is replaced with the item; its failure is the answer.
    case load(play: Bool)
    /// `retry` after a failure: loaded again, ready, its failure the answer.
    case retry
    /// A user's command chose it (`play` with an id, `next`, `previous`, the resume at start,
    /// removing what plays): an item that fails is skipped.
    case jump(play: Bool)
    /// Playback goes on by itself (after an item failed, or ended with a changed queue).
    case goesOn(play: Bool)

    var skipsFailures: Bool {
        switch self {
        case .load, .retry: false
        case .jump, .goesOn: true
        }
    }

    var play: Bool {
        switch self {
        case .load(let play), .jump(let play), .goesOn(let play): play
        case .retry: false
        }
    }

    var reason: ItemReason {
        switch self {
        case .load, .retry, .jump: .user
        case .goesOn: .end
        }
    }
}
