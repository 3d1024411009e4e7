import Foundation
import TonearmEngine
import TonearmSync

/// Performance news for clients: how long things took and when the sound faltered.
package enum PerformanceEvent: Sendable, Equatable {
    case loadStarted(url: String)
    /// From the play request to the first frames handed to the device.
    case firstAudio(latency: Double)
    case bufferingStarted
    case bufferingEnded(duration: Double)
    /// The device ran dry (xrun) and was recovered.
    case stall
    case resumed
    /// The output device went away (or was still away when play was asked), and why.
    case deviceLost(reason: String)
    /// The device is back; `resumed` says whether playback went on by itself.
    case deviceRestored(resumed: Bool)
    /// A network source's connection dropped; this attempt to reconnect starts `delay` seconds
    /// after the previous one.
    case reconnecting(attempt: Int, delay: Double)

    package var name: String {
        switch self {
        case .loadStarted: "load_started"
        case .firstAudio: "first_audio"
        case .bufferingStarted: "buffering_started"
        case .bufferingEnded: "buffering_ended"
        case .stall: "stall"
        case .resumed: "resumed"
        case .deviceLost: "device_lost"
        case .deviceRestored: "device_restored"
        case .reconnecting: "reconnecting"
        }
    }
}

/// Turns the same engine changes the adapter sees into `PerformanceEvent`s, with durations
/// measured on a monotonic clock.
package final class PerformanceObserver: Sendable {
    /// Each subscriber keeps the 1,024 newest events: a slow consumer loses old ones instead of
    /// holding memory without end or slowing the others.
    private let broadcaster = StreamFanout<PerformanceEvent>(bufferingPolicy: .bufferingNewest(1024))
    private let bufferingSince = Locked<ContinuousClock.Instant?>(nil)
    /// The item that has already played once: `resumed` means playing again after a pause, not starting.
    private let playedItem = Locked<Int?>(nil)
    private let tokens = Locked<[ObservationToken]>([])

    package init() {}

    /// Starts watching `engine`. The player calls this after registering its own handler: each
    /// engine event reaches handlers in the order they were registered, so a client told of an
    /// event (a device back, say) finds the player's state already changed when it asks.
    package func observe(_ engine: PlayerEngine) {
        let observations = [
            engine.observeEvents { [weak self] _, event in self?.handle(event) },
            engine.observe(\.timeControlStatus, options: [.new]) { [weak self] _, change in
                self?.timeControlChanged(from: change.oldValue, to: change.newValue, itemID: change.itemID)
            },
        ]
        tokens.withLock { $0 = observations }
    }

    package func events() -> AsyncStream<PerformanceEvent> { broadcaster.subscribe() }

    private func handle(_ event: EngineEvent) {
        switch event {
        case .loadStarted(_, let url): broadcaster.yield(.loadStarted(url: url))
        case .firstAudioWritten(_, let latency): broadcaster.yield(.firstAudio(latency: latency))
        case .underrun: broadcaster.yield(.stall)
        case .deviceLost(_, let failure, _): broadcaster.yield(.deviceLost(reason: failure.message))
        case .deviceRestored(_, let resumes, _): broadcaster.yield(.deviceRestored(resumed: resumes))
        case .reconnecting(_, let attempt, let delay): broadcaster.yield(.reconnecting(attempt: attempt, delay: delay))
        default: break
        }
    }

    private func timeControlChanged(from old: TimeControlStatus?, to new: TimeControlStatus, itemID: Int) {
        let now = ContinuousClock.now
        switch new {
        case .waitingToPlay:
            bufferingSince.withLock { $0 = now }
            broadcaster.yield(.bufferingStarted)
        case .playing:
            if let since = bufferingSince.withLock({ value in
                defer { value = nil }
                return value
            }) {
                let elapsed = now - since
                broadcaster.yield(
                    .bufferingEnded(duration: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18))
            }
            let playedBefore = playedItem.withLock { played in
                defer { played = itemID }
                return played == itemID
            }
            if old == .paused && playedBefore { broadcaster.yield(.resumed) }
        case .paused:
            break
        }
    }
}
