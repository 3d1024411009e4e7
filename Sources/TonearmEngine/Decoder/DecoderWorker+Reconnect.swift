import Foundation
import TonearmMedia

/// Reconnecting, on the decoder thread: a network item whose connection dropped plays out what
/// is decoded while the connection is retried with a growing back-off; a file goes on from the
/// frame where it stopped (HTTP Range), a live stream is joined again, live.
extension DecoderWorker {
    /// A dropped network connection being retried, with growing back-off, while the pipe plays out.
    struct Reconnect {
        var attempt = 0
        /// When the connection dropped.
        let since: Double
        /// The wait before the next attempt, and when it is due.
        var delay: Double
        var nextAt: Double
        /// The track frame the item goes on from: a file resumes there (Range), a live stream
        /// counts on from there.
        let resumeFrame: Int64
        let isLive: Bool
        var lastError: String

        static let firstDelay = 0.5
        static let longestDelay = 30.0
    }

    /// The connection of a network item dropped: what is decoded is handed on (it plays out while
    /// the connection is retried), and the first attempt is due after `Reconnect.firstDelay`.
    func startReconnect(
        _ item: EngineItem, _ decoder: MediaDecoder, _ failure: EngineFailure,
        _ state: inout DecoderState
    ) {
        if let fill = state.fill, fill.frames > 0 {
            shared.pipe.push(fill)
            state.fill = nil
            shared.lock.wakeOutput()
        }
        let now = EngineLock.now()
        // A connection reopened that brought no new audio did not end the outage: its window
        // (and its count of attempts) goes on from the first drop, or a server that accepts
        // each request and then sends nothing would restart `reconnect_for_s` for ever.
        let outage = state.regaining
        state.regaining = nil
        // Each reopen that brought nothing waits longer before the next, as failed attempts do.
        let delay = outage.map { min(Reconnect.longestDelay, $0.delay * 2) } ?? Reconnect.firstDelay
        var nextAt = now + delay
        if let outage, input.reconnectForSeconds > 0 { nextAt = min(nextAt, outage.since + input.reconnectForSeconds) }
        state.reconnect = Reconnect(
            attempt: outage?.attempt ?? 0, since: outage?.since ?? now,
            delay: delay, nextAt: nextAt,
            resumeFrame: state.pendingPosition, isLive: decoder.isLive,
            lastError: failure.message)
        let closing = state.decoder
        state.decoder = nil
        shared.lock.unlock()
        withExtendedLifetime(closing) {}  // FFmpeg's release runs here, off the lock
        shared.lock.lock()
    }

    /// Sleeps until the next attempt is due (a command wakes it sooner), then tries: a file is
    /// opened again at the frame where it stopped (HTTP Range) and goes on sample for sample; a
    /// live stream is joined again, live. Gives up after `input.reconnectForSeconds` (0: never):
    /// the item fails with `network`.
    func reconnectStep(_ state: inout DecoderState) {
        shared.assertOn(.decoder)
        guard var plan = state.reconnect, let item = state.item else {
            state.reconnect = nil
            return
        }
        let now = EngineLock.now()
        if now < plan.nextAt {
            shared.lock.waitDecoder(untilMonotonic: plan.nextAt)
            return
        }
        let windowEnd = input.reconnectForSeconds > 0 ? plan.since + input.reconnectForSeconds : nil
        if let windowEnd, now >= windowEnd {
            let failure = EngineFailure(
                .network,
                "\(item.path): the connection was lost and not regained in "
                    + "\(Int(now - plan.since)) s (\(plan.attempt) attempts); the last error: \(plan.lastError)")
            fail(item, failure, &state)
            return
        }
        plan.attempt += 1
        state.reconnect = plan
        shared.post(.reconnecting(itemID: item.id, attempt: plan.attempt, delay: plan.delay))
        let myEpoch = shared.epoch
        let format = state.format
        let cancellation = CancellationFlag()
        // The attempt itself (opening, and seeking back to where it stopped, each with its
        // `timeout_ms`) ends with the window too: a server that trickles cannot stretch it. So
        // do the reads after it until new audio comes (`decodeStep` lifts the cap then): a
        // server that answers the request and never sends the body cannot either.
        if let windowEnd { cancellation.capDeadlines(secondsFromNow: windowEnd - now) }
        shared.decoder.cancellation = cancellation
        shared.lock.unlock()
        let reopened: Result<MediaDecoder, EngineFailure>
        do throws(EngineFailure) {
            let decoder = try MediaDecoder(url: item.url, input: input, cancellation: cancellation)
            try decoder.configureOutput(format)
            if !plan.isLive { try decoder.seek(toFrame: plan.resumeFrame) }
            reopened = .success(decoder)
        } catch {
            reopened = .failure(error)
        }
        shared.lock.lock()
        guard shared.epoch == myEpoch, state.item?.id == item.id, state.reconnect != nil else { return }
        switch reopened {
        case .success(let decoder):
            state.decoder = decoder
            state.reconnect = nil
            // Regained once audio past `resumeFrame` is decoded (`decodeStep`), not before.
            state.regaining = plan
            state.pendingPosition = plan.resumeFrame
            if plan.isLive {
                state.positionBase = plan.resumeFrame
            } else {
                state.discardBefore = plan.resumeFrame
            }
        case .failure(let failure):
            // Anything may answer while a server comes back (Icecast says 404 for a mount whose
            // source is away): every failure is retried until the time is up.
            plan.lastError = failure.message
            plan.delay = min(Reconnect.longestDelay, plan.delay * 2)
            // The window's end is the last moment to try or to give up, not a wait past it.
            plan.nextAt = min(EngineLock.now() + plan.delay, windowEnd ?? .infinity)
            state.reconnect = plan
        }
    }
}
