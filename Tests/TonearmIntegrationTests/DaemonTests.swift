import Testing

/// Every suite that drives a real tonearmd process. Their tests block the thread they run on
/// (plain sockets, like any script), so they run one at a time: on a 2-core machine two of
/// them at once would hold every thread of Swift's cooperative pool, and the engine's async
/// tests running alongside would starve.
@Suite("The real daemon", .serialized)
struct DaemonTests {}
