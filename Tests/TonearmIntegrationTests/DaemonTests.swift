import Testing

/// Every suite that drives a real tonearmd process (and its peers: servers, clients, a browser).
/// Each suite runs its own tests one at a time; the suites share the machine through
/// `.realDaemon` (TonearmTestSupport): a few tests at once, each on a thread of its own, those
/// that measure the machine itself alone.
@Suite("The real daemon")
struct DaemonTests {}
