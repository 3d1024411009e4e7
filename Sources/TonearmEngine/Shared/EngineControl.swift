import CLinux
import Foundation
import TonearmMedia
import TonearmSync

/// The engine's worker threads, for debug builds' ownership checks (`EngineControl.assertOn`).
enum EngineThread: String { case output, decoder }

/// One item the engine is asked to play. The caller chooses the id (unique, increasing): every
/// event about the item carries it.
package struct EngineItem: Sendable, Equatable {
    package let id: Int
    package let url: URL
    /// Under `ReplayGainMode.auto`: whether this item takes its album gain (its queue
    /// neighbour shares its album), as the player judges it.
    package var prefersAlbumGain: Bool
    /// Its measured loudness, if known (`replay_gain.mode` `auto` and `loudness`). The output
    /// takes what is known when the item's first frames reach the device and keeps it for the
    /// whole item: a measurement that lands later never changes the level mid-item.
    package var loudness: LoudnessMeasurement?
    /// Not measured yet: if it is still not when the decoder opens it from its start, the
    /// decoder measures it from the frames it decodes anyway (`loudnessMeasured` news).
    package var measuresOnTheWay: Bool
    /// Not measured yet, under a mode that levels by loudness: the decoder measures its opening
    /// as it opens it (`openingLoudness`), for a provisional level.
    package var measuresOpening: Bool
    /// The loudness of its opening (its first `openingSeconds`), measured by the decoder as it
    /// opened the item with `loudness` not known: taken by the output, provisionally and for
    /// the whole item, only if `loudness` is still not known at the item's first write. Set in
    /// `items.known` by the decoder thread.
    package internal(set) var openingLoudness: LoudnessMeasurement?
    /// Decoded as the next item: joins the item before it gaplessly even when a crossfade is set
    /// (the two are tracks of one album, as the player judges it). nil: not known yet (their
    /// tags are being read); the decoder waits for it as for a next not named yet.
    package var joinsGaplessly: Bool?
    /// Its length as its tags say, seconds, if known: a crossfade into it is at most half of it.
    package var durationHint: Double?

    package init(
        id: Int, url: URL, prefersAlbumGain: Bool = false, loudness: LoudnessMeasurement? = nil,
        measuresOnTheWay: Bool = false, measuresOpening: Bool = false, joinsGaplessly: Bool? = false,
        durationHint: Double? = nil
    ) {
        self.id = id
        self.url = url
        self.prefersAlbumGain = prefersAlbumGain
        self.loudness = loudness
        self.measuresOnTheWay = measuresOnTheWay
        self.measuresOpening = measuresOpening
        self.joinsGaplessly = joinsGaplessly
        self.durationHint = durationHint
    }

    var path: String { url.isFileURL ? url.path : url.absoluteString }
}

/// A fade the output carries out over the volume: from `from` (nil: where it stands) to `to`,
/// over `seconds` of wall-clock time; `serial` tells a new request from the one in force.
struct FadeRequest {
    var from: Double?
    var to: Double = 1
    var seconds: Double = 0
    var serial = 0

    /// Its length in frames of `format`, paced at `speed`.
    func frames(_ format: PCMFormat, _ speed: Double) -> Int {
        Int((seconds * Double(format.sampleRate) * speed).rounded())
    }
}

/// What the decoder must produce in the current epoch.
struct DecodeTarget {
    var item: EngineItem
    var startSeconds: Double
    var runStart: RunStart
}

/// The engine's shared state: the command mailbox, and what each worker thread publishes.
/// Modelled on MPD's `PlayerControl`: one mutex (`lock`) with a condition per thread, and each
/// field says who writes it. `@unchecked Sendable`: every `var` below is read and written only
/// with `lock` held (the per-field comments say which thread's code writes it); `let`s are
/// immutable or Sendable; `pipe` is guarded by `lock` as a whole (see `ChunkPipe`).
final class EngineControl: @unchecked Sendable {
    let lock = EngineLock()
    let observers = ObserverRegistry()
    /// Up to 4 MiB of PCM between the threads (1.4 s of 8-channel 96 kHz float); the decoder keeps
    /// at most `decodeAheadSeconds` in it.
    let pipe = ChunkPipe(chunkCount: 64)
    /// Marks the seek the engine makes itself, so no caller mistakes its completion for its own.
    static let internalSeekToken = Int.min

    /// How much of a network item is buffered before it plays (`prebufferSeconds`).
    let prebufferSeconds: Double

    // MARK: Written by callers (any thread), and where noted by the output thread.

    /// Bumped by every open, seek and stop, and by the output thread when the device dropped
    /// what it held: chunks of an older epoch are void and the decoder starts over.
    var epoch = 0
    /// What the decoder produces in this epoch; nil after stop. Written by callers, and by the
    /// output thread when the device forces a redo (it dropped what it held, or it granted another
    /// format) or could not be opened.
    var target: DecodeTarget?
    /// The item to decode, gapless, once `after` has been decoded to its end. It stays set after
    /// the decoder opened it, so a seek back into `after` decodes it again. Written by callers
    /// (and cleared by the output thread when the device cannot be opened).
    var next: (after: Int, item: EngineItem)?

    /// What callers want of the sound (`PlayIntent`).
    var play = PlayIntent()
    /// The items callers named, and those they replaced before they were heard.
    var items = ItemBook()
    /// The clip mixed over the music, asked by callers, opened by the decoder, mixed by the output.
    var overlay = OverlayShared()
    /// Callers waiting for a pause or a fade to take effect.
    var waits = EngineWaits()
    /// Commands queued for the threads (`EngineCommand`).
    var commands = EngineCommands()

    // MARK: What each thread tells the others.

    private var outputReport = OutputReport()
    private var decoderReport = DecoderReport()

    /// Written by the output thread only: debug builds stop where another thread writes it.
    var output: OutputReport {
        _read { yield outputReport }
        _modify {
            assertOn(.output)
            yield &outputReport
        }
    }

    /// Written by the decoder thread only: debug builds stop where another thread writes it.
    var decoder: DecoderReport {
        _read { yield decoderReport }
        _modify {
            assertOn(.decoder)
            yield &decoderReport
        }
    }

    /// Playback reached the end after this item, in this epoch: nothing followed it.
    var chainEndedAfter: Int? { output.chainEnded.flatMap { $0.epoch == epoch ? $0.after : nil } }

    // MARK: Written by the output thread.

    /// What is being heard; see `PlaybackClock`.
    var clock: PlaybackClock

    init(configuration: OutputConfiguration, input: InputConfiguration) {
        prebufferSeconds = input.prebufferSeconds
        clock = PlaybackClock(speed: configuration.pace ? max(configuration.speed, 0.001) : 1)
    }

    /// Track time advances this many seconds per wall-clock second.
    var speed: Double { clock.speed }

    // MARK: Thread ownership, checked in debug builds.

    /// Called by each worker thread first thing, lock held.
    func recordThread(_ role: EngineThread) { lock.record(role) }

    /// Stops a debug build where code given to `role`'s thread runs on another (what that thread
    /// alone writes would then be written from two threads). Lock held.
    func assertOn(_ role: EngineThread, file: StaticString = #fileID, line: UInt = #line) {
        lock.assertOn(role, file: file, line: line)
    }

    // MARK: Helpers for code that holds the lock.

    /// How far the decoder runs ahead of what is heard: enough to open the next item well before
    /// the current one ends (gapless), and more than a network source's prebuffer.
    var decodeAheadSeconds: Double { max(Self.decodeAheadSeconds, prebufferSeconds + 1) }

    /// Whether a network item's audio in the pipe is enough to start (or go on) playing it: the
    /// prebuffer is full, or no more of the item is coming, or the pipe can hold no more. Lock held.
    func prebuffered(_ itemID: Int) -> Bool {
        lock.assertHeld()
        return pipe.bufferedSeconds >= prebufferSeconds || pipe.freeCount == 0 || decoder.epoch != epoch
            || decoder.itemID != itemID || pipe.contains { $0.itemID == itemID && $0.endsItem }
    }

    /// Starts a new epoch: everything queued so far is void. Lock held.
    func beginEpoch() {
        lock.assertHeld()
        epoch += 1
        items.abandoned.removeAll(keepingCapacity: true)
        decoder.cancellation.cancel()
        lock.wakeAll()
    }

    /// Remembers an item a caller named (lock held); the 8 newest are kept.
    func remember(_ item: EngineItem) {
        lock.assertHeld()
        if items.known.count >= 8 { items.known.removeFirst() }
        items.known.append(item)
    }

    func knownItem(_ itemID: Int) -> EngineItem? { items.known.last(where: { $0.id == itemID }) }

    /// The loudness an item is leveled with, and whether it is only its opening's: what the
    /// output took at its first write; before that, its measurement if known, else its
    /// opening's. Lock held.
    func leveling(_ itemID: Int) -> (measurement: LoudnessMeasurement?, provisional: Bool) {
        if let inForce = output.loudnessInForce, inForce.itemID == itemID { return (inForce.measurement, inForce.provisional) }
        let item = knownItem(itemID)
        if let loudness = item?.loudness { return (loudness, false) }
        return (item?.openingLoudness, item?.openingLoudness != nil)
    }

    func info(for itemID: Int) -> MediaInfo? {
        decoder.infos.last(where: { $0.itemID == itemID })?.info
    }

    /// The instant the clock is read at: now, or when a pause was asked that the output has
    /// not carried out yet. Lock held.
    var clockNow: Double {
        lock.assertHeld()
        let now = EngineLock.now()
        return !play.requested && clock.consuming ? min(now, play.pauseRequestedAt) : now
    }

    /// A pause was asked that the output has not carried out yet (a fade-out may be under way).
    /// Not while the output waits for a network item to fill again: that pause comes with the
    /// audio, however long the network takes. Lock held.
    var pauseIsPending: Bool { !play.requested && clock.consuming && target != nil && !play.shuttingDown && !output.awaitsFill }

    /// The place a pending pause stands at, once known. Lock held.
    var pendingPauseStands: (itemID: Int, seconds: Double)? {
        guard let stands = play.pauseStandsAt, stands.epoch == epoch, pauseIsPending else { return nil }
        return (stands.itemID, Double(stands.frame) / Double(stands.sampleRate))
    }

    /// Whether a caller waiting for the pause may have its answer: none is pending, or where it
    /// stands is known. Lock held.
    var pauseIsAnswered: Bool { !pauseIsPending || pendingPauseStands != nil }

    /// Resumes the callers waiting for a pause once it is answered. Lock held.
    func resumePauseWaitersIfDone() {
        guard !waits.pause.isEmpty, pauseIsAnswered else { return }
        let waiters = waits.pause
        waits.pause = []
        for waiter in waiters { waiter.resume() }
    }

    /// The item being heard now (or parked at), if any item is loaded. Lock held.
    var heardItemID: Int? {
        let id = clock.heard(now: clockNow).itemID
        return id == 0 ? nil : id
    }

    /// Changes the snapshot; observers learn of it with the next event posted. Lock held, so
    /// changes and events keep one order.
    func publish(_ change: (inout EngineSnapshot) -> Void) {
        lock.assertHeld()
        observers.update(change)
    }

    /// Changes `timeControlStatus` and, if it changed, posts the event that carries it. Lock held.
    func setTimeControl(_ status: TimeControlStatus) {
        lock.assertHeld()
        let itemID: Int? = observers.update { snapshot in
            guard snapshot.timeControlStatus != status else { return nil }
            snapshot.timeControlStatus = status
            return snapshot.itemID
        }
        if let itemID { observers.post(.timeControlChanged(itemID: itemID, status)) }
    }

    /// Posts an event. Lock held, so events keep the order of what caused them.
    func post(_ event: EngineEvent) {
        lock.assertHeld()
        observers.post(event)
    }

    /// Whether the item after `itemID`, partly handed to the device, can still be taken back:
    /// `itemID` is heard, and the border into what follows is far enough ahead for the output
    /// thread to act before it (lock held).
    func canTakeBack(after itemID: Int) -> Bool {
        lock.assertHeld()
        guard output.rewinds, output.epoch == epoch else { return false }
        let now = clockNow
        guard clock.heard(now: now).itemID == itemID else { return false }
        guard clock.consuming else { return true }  // paused or parked: nothing moves
        // Where what follows starts: its recorded segment, or, while its first write is still in
        // the device call (`lastWrittenItem` is set before it, the clock after), the end of
        // what was written before.
        guard let border = clock.framesWritten(after: itemID, now: now) != nil ? clock.nextSegmentHeardAt : clock.writtenHeardAt
        else { return true }
        return border - now > output.responseSeconds
    }

    /// Makes `itemID` the snapshot's item (lock held): its info, duration and status.
    func publishHeard(_ itemID: Int, position: Double) {
        let info = info(for: itemID)
        publish { snapshot in
            if snapshot.itemID != itemID {
                snapshot.itemID = itemID
                snapshot.status = .readyToPlay
            }
            snapshot.mediaInfo = info
            snapshot.duration = info?.duration
        }
    }
}
