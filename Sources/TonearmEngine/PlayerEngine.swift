import Foundation

/// Plays one media item at a time: FFmpeg decode on a decoder thread per item, ALSA output on
/// one output thread. Its public methods never block: they record the request under the engine
/// lock and wake the threads. Results arrive through observation (see `observe`).
///
/// Threads: callers (any thread or task) · the item's decoder thread (opens the file and the
/// device, decodes, seeks) · the output thread (writes to ALSA, paces, pauses) · the observer
/// queue (delivers callbacks). The cooperative thread pool is never blocked.
public final class PlayerEngine: Sendable {
    public let configuration: OutputConfiguration
    let runtime: EngineRuntime

    public init(configuration: OutputConfiguration) {
        self.configuration = configuration
        runtime = EngineRuntime(configuration: configuration)
        runtime.startOutputThread()
    }

    deinit { runtime.shutdown() }

    // MARK: Observation

    /// Observes one property. Callbacks run on the engine's serial observer queue, in the order
    /// of the changes; `.initial` delivers the current value first. Keep the token alive.
    public func observe<Value: Equatable & Sendable>(
        _ keyPath: KeyPath<EngineSnapshot, Value> & Sendable,
        options: ObservationOptions = [.new],
        _ handler: @escaping @Sendable (PlayerEngine, ObservedChange<Value>) -> Void
    ) -> ObservationToken {
        runtime.observers.addSnapshotHandler(initial: options.contains(.initial)) { [weak self] old, new in
            guard let self else { return }
            if let old {
                guard options.contains(.new), old[keyPath: keyPath] != new[keyPath: keyPath] else { return }
                handler(self, ObservedChange(oldValue: old[keyPath: keyPath], newValue: new[keyPath: keyPath]))
            } else {
                handler(self, ObservedChange(oldValue: nil, newValue: new[keyPath: keyPath]))
            }
        }
    }

    /// Observes events (end, failure, seek done, first audio, underrun, device lost) on the same queue.
    public func observeEvents(_ handler: @escaping @Sendable (PlayerEngine, EngineEvent) -> Void) -> ObservationToken {
        runtime.observers.addEventHandler { [weak self] event in
            guard let self else { return }
            handler(self, event)
        }
    }

    public var snapshot: EngineSnapshot { runtime.observers.snapshot }
    public var status: EngineStatus { snapshot.status }
    public var timeControlStatus: TimeControlStatus { snapshot.timeControlStatus }
    public var duration: Double? { snapshot.duration }
    public var mediaInfo: MediaInfo? { snapshot.mediaInfo }
    public var isPlaybackBufferEmpty: Bool { snapshot.isPlaybackBufferEmpty }
    public var isPlaybackLikelyToKeepUp: Bool { snapshot.isPlaybackLikelyToKeepUp }

    /// The exact position being heard, in seconds.
    public var currentTime: Double { runtime.currentTime() }

    // MARK: Commands

    /// Opens `url` on a new decoder thread, replacing the current item. Returns the new item's id;
    /// `status` becomes `.readyToPlay` or `.failed` for that id.
    @discardableResult
    public func load(url: URL, startAt: Double = 0) -> Int { runtime.load(url: url, startAt: startAt) }

    public func play() { runtime.setPlaying(true) }
    public func pause() { runtime.setPlaying(false) }

    /// Seeks the current item. Its `seekCompleted` event carries `token`: callers that wait for
    /// the completion register the token before calling, since the event can come at once.
    /// Returns false when nothing is loaded.
    @discardableResult
    public func seek(to seconds: Double, token: Int = 0) -> Bool { runtime.seek(to: seconds, token: token) }

    /// Stops playback and releases the file and the device.
    public func stop() { runtime.stop() }

    /// Waits until no item holds the device (after `stop`), off the cooperative pool.
    public func waitUntilReleased() async { await runtime.waitUntilReleased() }
}
