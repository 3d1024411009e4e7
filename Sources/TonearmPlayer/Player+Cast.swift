import Foundation
import Glibc
import TonearmCore
import TonearmEngine
import TonearmMedia

/// Who holds the room: the queue people built, or a control point casting to it.
package enum PlaybackSource: Sendable, Equatable {
    case queue
    /// A UPnP control point (its address) casts: the queue is set aside until the cast ends.
    case upnp(controlPoint: String)
}

/// What `cast-aside.json` in the state directory holds while a cast plays: the queue and where
/// playback stood when the cast began, paused. A crash during a cast leaves it behind, and the
/// next start gives the queue back from it.
package struct CastAside: Codable, Sendable, Equatable {
    package var format = 1
    package var controlPoint: String
    package var saved: SavedPlayerState

    package init(controlPoint: String, saved: SavedPlayerState) {
        self.controlPoint = controlPoint
        self.saved = saved
    }
}

/// Casting (the UPnP renderer's side of the player). The first cast puts the queue aside, in
/// memory and in `cast-aside.json`; the cast's items are then the queue (so gapless joins,
/// ReplayGain, crossfade and every front-end's view hold unchanged), with the default options.
/// `endCast` brings the queue back exactly, paused where it stood. While a cast holds the room,
/// the user's queue edits are refused (they would be lost with the cast's queue), and a local
/// `load`, `play`, `next` or `previous` ends the cast first.
extension Player {
    package var source: PlaybackSource { model.withLock { $0.cast?.source ?? .queue } }

    /// Where the set-aside queue is kept (the state directory). Returns true when a cast held
    /// the room when the daemon stopped: the caller then gives the queue back (`endCast`)
    /// instead of resuming the cast's item.
    package func keepCasts(in directory: String) -> Bool {
        let file = StateFile(directory: directory, name: "cast-aside.json")
        castFile.withLock { $0 = file }
        switch StateFile.readRegularFile(file.path, limit: 64 << 20) {
        case .success(let bytes):
            do {
                let aside = try JSONDecoder().decode(CastAside.self, from: Data(bytes))
                if let problem = aside.saved.problem { throw PlayerError.invalid(problem) }
                model.withLock { $0.cast = CastHold(source: .upnp(controlPoint: aside.controlPoint), aside: aside.saved) }
                logger.notice("a cast held the room when the daemon stopped: the queue is given back")
                return true
            } catch {
                logger.error(
                    "the queue set aside for a cast cannot be read; it is left where it is",
                    metadata: ["file": "\(file.path)", "error": "\(error)"])
                return false
            }
        case .failure(.missing): return false
        case .failure(let refusal):
            logger.error("cannot read the queue set aside for a cast", metadata: ["file": "\(file.path)", "error": "\(refusal)"])
            return false
        }
    }

    /// Plays `url` for a control point (SetAVTransportURI): the first cast sets the queue
    /// aside (and refuses when that cannot be kept on disk: nothing of the user's is put at
    /// risk). Playing goes on playing the new URI; otherwise it is loaded, ready. `tags` (the
    /// control point's DIDL-Lite) are what every front-end shows of it.
    package func cast(_ url: URL, tags known: MediaTags?, from controlPoint: String) async throws(PlayerError) -> MediaInfo {
        let holds = model.withLock { m in
            if m.cast != nil { m.cast?.source = .upnp(controlPoint: controlPoint) }
            return m.cast != nil
        }
        if !holds {
            var aside = savedState
            if aside.playback == .playing { aside.playback = .paused }
            do {
                let data = try JSONEncoder().encode(CastAside(controlPoint: controlPoint, saved: aside))
                guard let file = castFile.withLock({ $0 }) else {
                    throw PlayerError.invalid("casting needs a state directory to keep the queue in")
                }
                try file.write(data)
            } catch let error as PlayerError {
                throw error
            } catch {
                throw .failed(PlaybackError(.internal, "cannot set the queue aside: \(error)"))
            }
            model.withLock { m in
                m.cast = CastHold(source: .upnp(controlPoint: controlPoint), aside: aside)
                // The cast plays with the default options: the queue's repeat, random, single
                // and consume come back with it. The crossfade is the room's.
                var options = QueueOptions()
                options.crossfade = m.queue.options.crossfade
                _ = try? edit(&m, .setOptions(options: options, randomSeed: 0))
            }
            logger.info("a cast begins: the queue is set aside", metadata: ["from": "\(controlPoint)"])
        }
        if let known { tags.remember([url: known]) }
        // The cast's queue is this URI alone from here: only its description is kept.
        model.withLock { $0.cast?.tags = known.map { [url: $0] } ?? [:] }
        let playing = state == .playing || state.isResumingPlaying
        return try await loadAlone(url, play: playing).media
    }

    /// The URI to play after the current one (SetNextAVTransportURI; nil: none): whatever
    /// followed is replaced, and the engine decodes it ahead for a gapless join.
    package func castNext(_ url: URL?, tags known: MediaTags?) throws(PlayerError) {
        if let url, let known { tags.remember([url: known]) }
        try model.withLock { m throws(PlayerError) in
            guard m.cast != nil else { throw .invalid("no cast holds the room") }
            if let url, let known { m.cast?.tags[url] = known }
            let position = m.queue.currentID.flatMap { m.queue.position(of: $0) } ?? (m.queue.items.count - 1)
            let after = m.queue.items.dropFirst(position + 1).map(\.id)
            do throws(QueueError) {
                if !after.isEmpty { try edit(&m, .remove(ids: after)) }
                if let url {
                    _ = try edit(&m, .add(entries: [QueueEdit.Entry(url: url, title: known?.title)], at: position + 1))
                }
            } catch { throw PlayerError(error) }
            let queued = Set(m.queue.items.map(\.url))
            let described = m.cast?.tags.filter { queued.contains($0.key) } ?? [:]
            m.cast?.tags = described
            publishQueue(m)
            if let url { tags.request([url]) }
            refreshNext(&m)
        }
    }

    /// Play for a control point: resumes, or starts the cast's current item again once it
    /// stopped or ended.
    package func castPlay() async throws(PlayerError) -> PlaybackState {
        try await startPlaying(id: nil).state
    }

    /// Next for a control point: to the URI set as next.
    package func castSkip() async throws(PlayerError) -> PlaybackState {
        try await skipForward().state
    }

    /// Ends the cast, if one holds the room: what it plays stops, the queue comes back as it
    /// was set aside, paused where it stood, and the file is removed once that is durable.
    /// Returns false when no cast held the room.
    @discardableResult
    package func endCast(_ why: String) async -> Bool {
        guard let hold = model.withLock({ $0.cast }) else { return false }
        _ = try? stop()
        let sequence: Int? = model.withLock { m in
            guard m.cast != nil else { return nil }
            m.cast = nil
            _ = try? edit(&m, .bringBack(queue: hold.aside.queue))
            publishQueue(m)
            tags.request(m.queue.items.map(\.url))
            return changes.recorded
        }
        guard let sequence else { return false }
        logger.info("the cast ends: the queue is given back", metadata: ["why": "\(why)"])
        await changes.durable(sequence)
        if let file = castFile.withLock({ $0 }), unlink(file.path) != 0, errno != ENOENT {
            logger.error("cannot remove the queue set aside for a cast", metadata: ["file": "\(file.path)"])
        }
        await resume(hold.aside, mode: .paused)
        return true
    }

    /// A local command that picks what plays ends a cast first.
    func endCastForLocalCommand() async {
        if model.withLock({ $0.cast != nil }) { await endCast("a local command") }
    }

    /// Queue edits are refused while a cast holds the room: the cast's queue is not the user's.
    func refuseWhileCasting(_ m: Model) throws(PlayerError) {
        if case .upnp(let controlPoint)? = m.cast?.source {
            throw .invalid(
                "a cast from \(controlPoint) holds the room and the queue is set aside; play, next, previous or load ends the cast")
        }
    }
}

/// A cast's hold on the player: who casts, and the queue set aside for it.
struct CastHold: Sendable {
    var source: PlaybackSource
    var aside: SavedPlayerState
    /// What the control point said of its URIs (DIDL-Lite): shown over the streams' own tags.
    var tags: [URL: MediaTags] = [:]
}

extension MediaInfo {
    /// The item as a cast describes it: the control point's title, artist and album, where it gave them.
    func described(by tags: MediaTags?) -> MediaInfo {
        guard let tags else { return self }
        var info = self
        if let title = tags.title { info.title = title }
        if let artist = tags.artist { info.artist = artist }
        if let album = tags.album { info.album = album }
        return info
    }
}
