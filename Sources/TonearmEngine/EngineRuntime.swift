import CLinux
import Foundation

/// The engine's shared state and threads. `@unchecked Sendable`: every `var` is guarded by
/// `lock`; the rest is immutable or Sendable.
final class EngineRuntime: @unchecked Sendable {
    let configuration: OutputConfiguration
    let lock = EngineLock()
    let observers = ObserverRegistry()

    var item: ItemSession?
    /// The last session started, current or not: used to wait for the device's release.
    var lastSession: ItemSession?
    var nextItemID = 0
    var shuttingDown = false

    /// Track time advances this many seconds per wall-clock second.
    var speed: Double { configuration.pace ? max(configuration.speed, 0.001) : 1 }

    init(configuration: OutputConfiguration) { self.configuration = configuration }

    func startOutputThread() {
        Self.startThread(named: "tonearm-output") { [self] in runOutput() }
    }

    /// Starts a thread whose name `top -H`, `perf` and /proc show (Foundation's `Thread.name`
    /// does not reach the kernel here, so it is set from inside).
    static func startThread(named name: String, _ body: @escaping @Sendable () -> Void) {
        let thread = Thread {
            _ = tonearm_name_current_thread(name)
            body()
        }
        thread.name = name
        thread.start()
    }

    func currentTime() -> Double {
        lock.withLock { item?.position(now: EngineLock.now(), speed: speed) ?? 0 }
    }

    /// Publishes a snapshot change, only when `session` is still the current item (lock held).
    func publish(for session: ItemSession, _ change: (inout EngineSnapshot) -> Void) {
        guard session === item else { return }
        observers.update(change)
    }

    func post(for session: ItemSession, _ event: EngineEvent) {
        guard session === item else { return }
        observers.post(event)
    }

    func load(url: URL, startAt: Double) -> Int {
        let path = url.isFileURL ? url.path : url.absoluteString
        let session: ItemSession = lock.withLock {
            nextItemID += 1
            let previous = item
            previous.map(cancel)
            let session = ItemSession(id: nextItemID, path: path, startAt: max(0, startAt), previous: previous)
            item = session
            lastSession = session
            observers.update { snapshot in
                snapshot = EngineSnapshot(itemID: session.id, currentTime: session.startAt)
            }
            observers.post(.loadStarted(itemID: session.id, url: url.absoluteString))
            lock.wakeAll()
            return session
        }
        let isLocal = url.isFileURL || url.scheme == nil
        Self.startThread(named: "tonearm-decoder") { [self] in
            runDecoder(session, unsupported: isLocal ? nil : "only local files are supported, not '\(url.scheme ?? "")' URLs")
        }
        return session.id
    }

    /// Lock held.
    private func cancel(_ session: ItemSession) {
        session.cancelled = true
        session.cancellation.cancel()
        session.playRequested = false
    }

    func setPlaying(_ playing: Bool) {
        lock.withLock {
            // A pause asked while the device is away is kept: the device's return must not undo it.
            if !playing { item?.resumeOnRestore = false }
            guard let item, item.playRequested != playing else { return }
            item.playRequested = playing
            if playing {
                item.playRequestedAt = EngineLock.now()
                // Playing again after the end replays the end (the coordinator seeks first to restart).
                item.endReported = false
            }
            lock.wakeOutput()
        }
    }

    func seek(to seconds: Double, token: Int) -> Bool {
        lock.withLock {
            guard let item else { return false }
            item.pendingSeek = (max(0, seconds.isFinite ? seconds : 0), token)
            item.endReported = false
            lock.wakeAll()
            return true
        }
    }

    func stop() {
        lock.withLock {
            guard let session = item else { return }
            cancel(session)
            item = nil
            observers.update { $0 = EngineSnapshot(itemID: session.id) }
            lock.wakeAll()
        }
    }

    func shutdown() {
        stop()
        lock.withLock {
            shuttingDown = true
            lock.wakeAll()
        }
    }

    func waitUntilReleased() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let thread = Thread { [self] in
                lock.withLock {
                    while let session = lastSession, session.cancelled, session.deviceClaimed, !session.deviceReleased {
                        lock.waitDecoder()
                    }
                }
                continuation.resume()
            }
            thread.start()
        }
    }
}
