import Foundation
import TonearmCore
import TonearmFrontEnd
import TonearmLibrary
import TonearmMedia
import TonearmPlayer
import TonearmProtocol

/// How the core's and the engine's values travel on the wire (docs/protocol.md).
enum ProtocolEncoding {
    static func state(_ state: PlaybackState) -> JSONValue {
        var object: [String: JSONValue] = ["state": .string(state.name)]
        switch state {
        case .loading(let url): object["url"] = .string(url.isFileURL ? url.path : url.absoluteString)
        case .buffering(let previous): object["resume"] = .string(previous.rawValue)
        case .seeking(let target, let previous):
            object["target"] = .number(target)
            object["resume"] = .string(previous.rawValue)
        case .failed(let error): object["error"] = self.error(error)
        default: break
        }
        return .object(object)
    }

    static func error(_ error: PlaybackError) -> JSONValue {
        ["kind": .string(error.kind.rawValue), "message": .string(error.message), "recoverable": .bool(error.isRecoverable)]
    }

    static func action(_ action: PlaybackAction) -> JSONValue {
        var object: [String: JSONValue] = ["name": .string(action.name)]
        switch action {
        case .load(let url): object["url"] = .string(url.isFileURL ? url.path : url.absoluteString)
        case .seek(let target): object["target"] = .number(target)
        case .didFail(let error): object["error"] = self.error(error)
        // The names before 0.2, for one release (docs/protocol.md).
        case .deviceLost: object["alias"] = "audioSessionInterrupted"
        case .deviceRestored: object["alias"] = "audioSessionResumed"
        default: break
        }
        return .object(object)
    }

    static func transition(_ transition: PlaybackTransition) -> JSONValue {
        [
            "type": "transition", "from": state(transition.from), "to": state(transition.to),
            "action": action(transition.action), "timestamp": .number(transition.timestamp.timeIntervalSince1970),
        ]
    }

    /// A library scan's news: `scan_started`, `scan_finished` (with what it did), `offline`.
    static func library(_ news: Library.LibraryNews) -> JSONValue {
        switch news {
        case .updateStarted(let job):
            return ["type": "library", "event": "scan_started", "job": JSONValue(job)]
        case .updateFinished(let job, let outcome):
            return [
                "type": "library", "event": "scan_finished", "job": JSONValue(job), "added": JSONValue(outcome.added),
                "changed": JSONValue(outcome.changed), "removed": JSONValue(outcome.removed),
                "failed": JSONValue(outcome.failed), "seconds": .number(outcome.seconds),
            ]
        case .offline(let job, let reason):
            return ["type": "library", "event": "offline", "job": JSONValue(job), "reason": .string(reason)]
        }
    }

    static func performance(_ event: PerformanceEvent) -> JSONValue {
        var object: [String: JSONValue] = ["type": "performance", "event": .string(event.name)]
        switch event {
        case .loadStarted(let url): object["url"] = .string(url)
        case .firstAudio(let latency): object["latency"] = .number(latency)
        case .bufferingEnded(let duration): object["duration"] = .number(duration)
        case .deviceLost(let reason): object["reason"] = .string(reason)
        case .deviceRestored(let resumed): object["resumed"] = .bool(resumed)
        case .reconnecting(let attempt, let delay):
            object["attempt"] = JSONValue(attempt)
            object["delay"] = .number(delay)
        case .bufferingStarted, .stall, .resumed: break
        }
        return .object(object)
    }

    static func media(_ info: MediaInfo?) -> JSONValue {
        guard let info else { return .null }
        return [
            "url": .string(info.url), "duration": JSONValue(info.duration), "codec": .string(info.codec),
            "container": .string(info.container), "sample_rate": JSONValue(info.sampleRate),
            "channels": JSONValue(info.channels), "bits_per_sample": JSONValue(info.bitsPerSample),
            "tags": ["title": JSONValue(info.title), "artist": JSONValue(info.artist), "album": JSONValue(info.album)],
            "output_format": format(info.outputFormat), "live": .bool(info.isLive),
        ]
    }

    static func format(_ format: PCMFormat) -> JSONValue {
        [
            "sample_type": .string(format.sampleType.rawValue), "sample_rate": JSONValue(format.sampleRate),
            "channels": JSONValue(format.channels),
        ]
    }

    static func status(_ status: PlayerStatus) -> JSONValue {
        let output = status.output
        var object: [String: JSONValue] = [
            "state": state(status.state), "position": .number(status.position), "buffer": .number(status.buffered),
            "duration": JSONValue(status.duration),
            "media": media(status.media),
            "output": [
                "device": .string(output.device), "pace": .bool(output.pace), "speed": .number(output.speed),
                "buffer_ms": JSONValue(output.bufferMilliseconds), "open": .bool(status.deviceOpen),
                "release_after_s": output.releaseAfterSeconds.map { .number($0) } ?? .number(-1),
                "format": status.media.map { format($0.outputFormat) } ?? .null,
            ],
        ]
        if let interruption = status.interruption { object["interruption"] = .string(interruption) }
        object["current"] = JSONValue(status.current)
        object["next"] = JSONValue(status.next)
        object["queue_version"] = JSONValue(status.queueVersion)
        object["volume"] = JSONValue(status.volume)
        object["replay_gain"] = replayGain(status.replayGain)
        object["sleep"] = sleep(status.sleep)
        switch status.source {
        case .queue: object["source"] = "queue"
        case .upnp(let controlPoint):
            object["source"] = "upnp"
            object["source_address"] = .string(controlPoint)
        }
        // The cover a cast names for what plays (the web remote's /art/ID serves it fetched).
        if let cover = status.cover { object["cover_url"] = .string(cover.absoluteString) }
        if let announcing = status.announcing {
            object["announcing"] = [
                "url": .string(announcing.url), "waiting": JSONValue(announcing.waiting),
                "ducking": .bool(announcing.ducking),
            ]
        }
        if let loudness = status.loudness {
            var shown: [String: JSONValue] = [
                "source": .string(loudness.gain.source.rawValue),
                "gain_db": .number(rounded(loudness.gain.decibels)),
            ]
            shown["integrated_lufs"] = loudness.measured.map { .number(rounded($0.integrated)) } ?? .null
            shown["peak_dbtp"] = loudness.measured.flatMap { $0.truePeak.isFinite ? .number(rounded($0.truePeak)) : nil } ?? .null
            shown["range_lu"] = loudness.measured.map { .number(rounded($0.range)) } ?? .null
            object["loudness"] = .object(shown)
        }
        return .object(object)
    }

    static func replayGain(_ settings: ReplayGainSettings) -> JSONValue {
        [
            "mode": .string(settings.mode.rawValue), "preamp_db": .number(settings.preampDB),
            "target_lufs": .number(settings.targetLUFS), "live": .string(settings.live.rawValue),
        ]
    }

    /// A file's measured loudness, as `library.search` shows it.
    static func loudness(_ measurement: LoudnessMeasurement) -> JSONValue {
        switch measurement {
        case .measured(let loudness):
            var object: [String: JSONValue] = [
                "integrated_lufs": .number(rounded(loudness.integrated)),
                "range_lu": .number(rounded(loudness.range)),
            ]
            object["peak_dbtp"] = loudness.truePeak.isFinite ? .number(rounded(loudness.truePeak)) : .null
            return .object(object)
        case .silent: return ["silent": true]
        case .unmeasurable: return ["unmeasurable": true]
        }
    }

    /// Decibels to a hundredth: what a meter can tell apart.
    private static func rounded(_ value: Double) -> Double { (value * 100).rounded() / 100 }

    static func url(_ url: URL) -> JSONValue {
        .string(url.isFileURL ? url.path : url.absoluteString)
    }

    static func queueItem(
        _ item: QueueItem, tags: MediaTags?, duration: Double? = nil,
        loudness: LoudnessMeasurement? = nil
    ) -> JSONValue {
        var object: [String: JSONValue] = ["id": JSONValue(item.id), "url": url(item.url)]
        if let duration = tags?.duration ?? duration { object["duration"] = .number(duration) }
        if let title = item.title ?? tags?.title { object["title"] = .string(title) }
        if let artist = tags?.artist { object["artist"] = .string(artist) }
        if let album = tags?.album { object["album"] = .string(album) }
        if let loudness { object["loudness"] = Self.loudness(loudness) }
        return .object(object)
    }

    /// `duration`: what is known of a file not read yet (the state file's, after a restart).
    static func queue(
        _ queue: PlayQueue, next: Int?, tags: (URL) -> MediaTags?, duration: (URL) -> Double? = { _ in nil },
        loudness: (URL) -> LoudnessMeasurement? = { _ in nil }
    ) -> JSONValue {
        [
            "items": .array(
                queue.items.map { (item: QueueItem) -> JSONValue in
                    let read = tags(item.url)
                    return queueItem(item, tags: read, duration: read == nil ? duration(item.url) : nil, loudness: loudness(item.url))
                }),
            "current": JSONValue(queue.currentID), "next": JSONValue(next), "version": JSONValue(queue.version),
            "repeat": .bool(queue.options.repeat), "single": .bool(queue.options.single),
            "consume": .bool(queue.options.consume), "random": .bool(queue.options.random),
            "crossfade": JSONValue(queue.options.crossfade),
        ]
    }

    static func queueEvent(_ event: QueueEvent) -> JSONValue {
        switch event {
        case .queue(let version):
            ["type": "queue", "version": JSONValue(version)]
        case .item(let id, let itemURL, let reason):
            ["type": "item", "id": JSONValue(id), "url": url(itemURL), "reason": .string(reason.rawValue)]
        case .itemFailed(let id, let kind, let message):
            ["type": "item_failed", "id": JSONValue(id), "kind": .string(kind.rawValue), "message": .string(message)]
        case .metadata(let id, let title, let artist):
            ["type": "metadata", "id": JSONValue(id), "title": .string(title), "artist": JSONValue(artist)]
        }
    }

    static func failure(_ error: PlayerError) -> RPC.Failure {
        switch error {
        case .rejected(let state, let action):
            RPC.Failure(
                .rejected, "\(action.name) is not possible while \(state.name)",
                data: ["state": self.state(state), "action": .string(action.name)])
        case .failed(let error):
            RPC.Failure(.mediaFailed, error.message, data: self.error(error))
        case .superseded(let state):
            RPC.Failure(.superseded, "superseded by a newer command (now \(state.name))", data: ["state": self.state(state)])
        case .invalid(let message):
            RPC.Failure(.invalidParams, "invalid params: \(message)")
        }
    }
}
