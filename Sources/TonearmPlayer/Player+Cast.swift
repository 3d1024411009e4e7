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
        castFile.withLock { $0.file = file }
        switch StateFile.readRegularFile(file.path, limit: 64 << 20) {
        case .success(let bytes):
            do {
                let aside = try JSONDecoder().decode(CastAside.self, from: Data(bytes))
                if let problem = aside.saved.problem { throw PlayerError.invalid(problem) }
                model.withLock { m in
                    m.castGeneration += 1
                    m.cast = CastHold(source: .upnp(controlPoint: aside.controlPoint), aside: aside.saved, generation: m.castGeneration)
                }
                logger.notice("a cast held the room when the daemon stopped: the queue is given back")
                return true
            } catch {
                // Kept beside, under another name: a later cast must not write over it.
                let kept = file.path + ".bad-\(StateFile.stamp(Date()))"
                let moved = rename(file.path, kept) == 0
                logger.error(
                    "the queue set aside for a cast cannot be read; it is kept as it is",
                    metadata: ["file": "\(moved ? kept : file.path)", "error": "\(error)"])
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
    package func cast(_ url: URL, tags known: MediaTags?, cover: URL? = nil, from controlPoint: String) async throws(PlayerError)
        -> MediaInfo
    {
        // A hold from the first moment: queue edits are refused while the queue is set aside, so
        // none is made between the snapshot and the cast's load (and lost with the cast's queue).
        let (generation, first): (Int, Bool) = model.withLock { m in
            if var hold = m.cast {
                hold.source = .upnp(controlPoint: controlPoint)
                m.cast = hold
                return (hold.generation, false)
            }
            m.castGeneration += 1
            m.cast = CastHold(source: .upnp(controlPoint: controlPoint), aside: nil, generation: m.castGeneration)
            return (m.castGeneration, true)
        }
        if first { try setAside(generation: generation, controlPoint: controlPoint) }
        if let known { tags.remember([url: known]) }
        // The cast's queue is this URI alone from here: only its description is kept.
        model.withLock { m in
            m.cast?.tags = known.map { [url: $0] } ?? [:]
            m.cast?.covers = cover.map { [url: $0] } ?? [:]
        }
        let playing = state == .playing || state.isResumingPlaying
        return try await loadAlone(url, play: playing, castGeneration: generation).media
    }

    /// The first cast's snapshot of the queue, kept on disk before anything changes; the hold
    /// `generation` is dropped when that fails.
    private func setAside(generation: Int, controlPoint: String) throws(PlayerError) {
        var aside = savedState
        if aside.playback == .playing { aside.playback = .paused }
        do {
            try castFile.withLock { kept in
                guard let file = kept.file else { throw PlayerError.invalid("casting needs a state directory to keep the queue in") }
                try file.write(try JSONEncoder().encode(CastAside(controlPoint: controlPoint, saved: aside)))
                // The file is this cast's now, whatever an earlier give-back left in it.
                kept.givenBackUnsaved = nil
            }
        } catch {
            model.withLock { m in if m.cast?.generation == generation { m.cast = nil } }
            if let error = error as? PlayerError { throw error }
            throw .failed(PlaybackError(.internal, "cannot set the queue aside: \(error)"))
        }
        let held: Bool = model.withLock { m in
            guard m.cast?.generation == generation else { return false }
            m.cast?.aside = aside
            // The cast plays with the default options: the queue's repeat, random, single and
            // consume come back with it. The crossfade is the room's.
            var options = QueueOptions()
            options.crossfade = m.queue.options.crossfade
            _ = try? edit(&m, .setOptions(options: options, randomSeed: 0))
            return true
        }
        guard held else {
            // A local command ended the cast before it began: its file is nobody's.
            removeCastFile()
            throw .superseded(by: state)
        }
        logger.info("a cast begins: the queue is set aside", metadata: ["from": "\(controlPoint)"])
    }

    /// The URI to play after the current one (SetNextAVTransportURI; nil: none): whatever
    /// followed is replaced, and the engine decodes it ahead for a gapless join.
    package func castNext(_ url: URL?, tags known: MediaTags?, cover: URL? = nil) throws(PlayerError) {
        if let url, let known { tags.remember([url: known]) }
        try model.withLock { m throws(PlayerError) in
            guard m.cast != nil else { throw .invalid("no cast holds the room") }
            if let url, let known { m.cast?.tags[url] = known }
            if let url, let cover { m.cast?.covers[url] = cover }
            // The cast's queue is the current URI and the next: what played before and what
            // was next go (a long cast of gapless pairs does not grow the queue).
            let current = m.queue.currentID ?? m.queue.items.last?.id
            let others = m.queue.items.map(\.id).filter { $0 != current }
            do throws(QueueError) {
                if !others.isEmpty { try edit(&m, .remove(ids: others)) }
                let position = m.queue.items.isEmpty ? -1 : 0
                if let url {
                    _ = try edit(&m, .add(entries: [QueueEdit.Entry(url: url, title: known?.title)], at: position + 1))
                }
            } catch { throw PlayerError(error) }
            let queued = Set(m.queue.items.map(\.url))
            if var hold = m.cast {
                hold.tags = hold.tags.filter { queued.contains($0.key) }
                hold.covers = hold.covers.filter { queued.contains($0.key) }
                m.cast = hold
            }
            publishQueue(m)
            if let url { tags.request([url]) }
            refreshNext(&m)
        }
    }

    /// Play for a control point: resumes, or starts the cast's current item again once it
    /// stopped or ended.
    package func castPlay() async throws(PlayerError) -> PlaybackState {
        try requireCast()
        return try await startPlaying(id: nil).state
    }

    /// Next for a control point: to the URI set as next.
    package func castSkip() async throws(PlayerError) -> PlaybackState {
        try requireCast()
        return try await skipForward().state
    }

    /// Ends the cast, if one holds the room: what it plays stops, the queue comes back as it
    /// was set aside, paused where it stood, and the file is removed once that is durable.
    /// Returns false when no cast held the room.
    @discardableResult
    package func endCast(_ why: String) async -> Bool {
        guard let hold = model.withLock({ $0.cast }) else { return false }
        guard let aside = hold.aside else {
            // Still beginning: nothing of the queue changed yet; the cast's load will not happen.
            model.withLock { m in if m.cast?.generation == hold.generation { m.cast = nil } }
            return true
        }
        _ = try? stop()
        let sequence: Int? = model.withLock { m in
            guard m.cast?.generation == hold.generation else { return nil }
            m.cast = nil
            _ = try? edit(&m, .bringBack(queue: aside.queue))
            publishQueue(m)
            tags.request(m.queue.items.map(\.url))
            return changes.recorded
        }
        guard let sequence else { return false }
        logger.info("the cast ends: the queue is given back", metadata: ["why": "\(why)"])
        if await changes.durable(sequence) {
            removeCastFile()
        } else {
            // The state file may still hold the cast's queue: the set-aside copy stays until a
            // snapshot holds the queue given back (`snapshotWritten`), so a crash loses nothing.
            castFile.withLock { kept in if model.withLock({ $0.cast == nil }) { kept.givenBackUnsaved = sequence } }
            logger.warning("the queue given back is not saved yet; cast-aside.json keeps it until it is")
        }
        await resume(aside, mode: .paused)
        return true
    }

    /// The cover a cast names for the queue item `id` (or for the item playing `url`), fetched
    /// once for every front-end; nil when no cast names one for it.
    package func castCover(forItem id: Int) async -> CastCover? {
        let cover: URL? = model.withLock { m in m.queue.item(id: id).flatMap { m.cast?.covers[$0.url] } }
        guard let cover else { return nil }
        return await castCovers.cover(cover, input: input)
    }

    package func castCover(for url: URL) async -> CastCover? {
        guard let cover = model.withLock({ $0.cast?.covers[url] }) else { return nil }
        return await castCovers.cover(cover, input: input)
    }

    /// Removes `cast-aside.json`, unless a cast holds the room (one that began meanwhile wrote
    /// its own file), which the file's lock keeps from beginning until it is done.
    private func removeCastFile() {
        castFile.withLock { kept in removeCastFile(&kept) }
    }

    /// The same, with the file's lock held.
    @discardableResult
    private func removeCastFile(_ kept: inout CastFile) -> Bool {
        guard let file = kept.file, model.withLock({ $0.cast == nil }) else { return false }
        kept.givenBackUnsaved = nil
        if unlink(file.path) != 0, errno != ENOENT {
            logger.error("cannot remove the queue set aside for a cast", metadata: ["file": "\(file.path)"])
            return false
        }
        return true
    }

    /// The state keeper wrote a snapshot holding every change through `sequence`: a
    /// set-aside copy kept for a give-back that was not saved (`endCast`) is no longer needed.
    func snapshotWritten(through sequence: Int) {
        castFile.withLock { kept in
            guard let unsaved = kept.givenBackUnsaved, sequence >= unsaved else { return }
            if removeCastFile(&kept) { logger.notice("the queue given back is saved; its set-aside copy is removed") }
        }
    }

    /// A change of the set-aside queue's options during a cast (`setOptions`) goes to its file,
    /// so that a crash gives back what the user chose.
    func keepAsideOptions() {
        castFile.withLock { kept in
            let hold = model.withLock { $0.cast }
            guard let file = kept.file, let hold, let aside = hold.aside, case .upnp(let controlPoint) = hold.source else { return }
            do {
                try file.write(try JSONEncoder().encode(CastAside(controlPoint: controlPoint, saved: aside)))
            } catch {
                logger.error("cannot keep the set-aside queue's options", metadata: ["file": "\(file.path)", "error": "\(error)"])
            }
        }
    }

    /// A control point's command acts only while its cast holds the room: after a give-back the
    /// room is the user's again.
    package func requireCast() throws(PlayerError) {
        guard model.withLock({ $0.cast?.aside != nil }) else { throw .invalid("no cast holds the room") }
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

/// `cast-aside.json`, once named, and a give-back not yet saved (its change number).
struct CastFile: Sendable {
    var file: StateFile?
    var givenBackUnsaved: Int?
}

/// A cast's hold on the player: who casts, and the queue set aside for it.
struct CastHold: Sendable {
    var source: PlaybackSource
    /// nil while the first cast is setting the queue aside.
    var aside: SavedPlayerState?
    /// One more for every cast that sets the queue aside: a command that waited knows whether
    /// the hold it began under is still the one.
    var generation = 0
    /// What the control point said of its URIs (DIDL-Lite): shown over the streams' own tags.
    var tags: [URL: MediaTags] = [:]
    /// The covers it named for them (`albumArtURI`).
    var covers: [URL: URL] = [:]
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
