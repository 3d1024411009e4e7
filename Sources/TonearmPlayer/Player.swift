import Foundation
import Logging
import TonearmCore
import TonearmEngine
import TonearmMedia
import TonearmSync

/// The player: owns the queue and the state machine, turns accepted commands into engine calls,
/// and turns engine events into actions (through `EngineEventAdapter`) and queue moves.
///
/// Concurrency: one lock (`model`, the player lock) guards the queue, the adapter's context and
/// the waiting commands. Every user command and every engine event is handled entirely inside
/// it, so the state machine sees commands and news in one order and news is always judged
/// against the context of the latest command. Engine calls never block, so the lock is held
/// only briefly and never across an `await`. Lock order: player lock, then the state machine's
/// and the engine's own locks (never the other way round).
///
/// Who calls what: the front-ends call the commands (`Player+Transport`: load, jumps, play,
/// pause, stop, seek, retry; `Player+Queue`: queue edits; `Player+Settings`: volume and
/// ReplayGain) on their own threads; the engine's news arrives on `tonearm-events`
/// (`Player+EngineNews`); the state keeper reads `savedState` on `tonearm-state`, and the daemon
/// calls `restore`/`resume` at start (`Player+State`). The public value types are in `PlayerTypes`.
package final class Player: Sendable {
    package let machine: PlaybackStateMachine
    let engine: PlayerEngine
    package let performance: PerformanceObserver
    /// How crossfades are made (the configuration's); how long, the queue's options say.
    package let crossfadeSettings: CrossfadeSettings
    /// How announcements play (the configuration's).
    package let announcementSettings: AnnouncementSettings
    let model: Locked<Model>
    let queueEvents = StreamFanout<QueueEvent>(bufferingPolicy: .bufferingNewest(1024))
    let settingsEvents = StreamFanout<SettingsEvent>(bufferingPolicy: .bufferingNewest(64))
    let logger: Logger
    let tokens = Locked<[ObservationToken]>([])
    /// Told of changes worth saving (the state keeper); set once at start. Held weakly: the
    /// keeper holds the player, and its owner (the daemon) keeps it.
    let changeObserverBox = Locked<WeakChangeObserver>(WeakChangeObserver())
    /// Tags of queued files (titles for `queue`, albums for ReplayGain's `auto`).
    let tags = TagReader()
    /// Queued files' measured loudness (`auto` and `loudness` modes), measured ahead.
    let loudness = LoudnessKeeper()
    /// The sleep timer's and the alarms' moments (`tonearm-timer`).
    let timer = WallClockTimer<TimerKey>()
    /// The alarms, kept in the state directory once `alarms.keep(in:)` is called.
    package let alarms: AlarmClock
    /// Every change worth keeping, numbered, on its way to the state journal: a front-end
    /// answers a command that changed something once its change is durable.
    package let changes = ChangeLog()
    /// Where a cast's set-aside queue is kept (`cast-aside.json`), once `keepCasts(in:)` is
    /// called. Its lock is held across each write or removal of the file (a few, each short),
    /// so they happen one at a time, in order. Lock order: this, then the player lock.
    let castFile = Locked(CastFile())
    /// The covers casts name, fetched for the front-ends that show them.
    let castCovers = CastCovers()

    /// What a waiting load or jump learns.
    enum LoadOutcome: Sendable {
        /// Ready, and the state that led to at that moment (playing, when asked to play on ready).
        case ready(engineID: Int, state: PlaybackState)
        case failed(PlaybackError)
        case superseded
        /// The command was not possible (answered before any engine call).
        case refused(PlayerError)
    }

    enum SeekOutcome: Sendable {
        /// Where the seek landed and the state it settled in, as they were at that moment.
        case landed(position: Double, state: PlaybackState)
        case failed(PlaybackError)
        case superseded
        case rejected(PlayerError)
    }

    struct Model {
        var queue = PlayQueue()
        var context = AdapterContext()
        var nextEngineID = 0
        var nextSeekToken = 0
        /// The engine items in play (the current one and the one named after it), by engine id.
        var inPlay: [Int: InPlay] = [:]
        var seekWaiters: [(token: Int, continuation: CheckedContinuation<SeekOutcome, Never>)] = []
        /// The queue item named to the engine as next, and failures in a row (a queue of bad files ends).
        var pendingNextQueueID: Int?
        var failuresInRow = 0
        var interruption: String?
        var volume: Int
        var replayGain: ReplayGainSettings
        var randomSeed: UInt64 = 0x5EED
        /// Where playback stood at the last stop, until the resume at start has loaded it: saved
        /// as it was meanwhile, so a stop before the resume is done loses neither play/pause nor
        /// the position.
        var pendingResume: (itemID: Int, playback: SavedPlayerState.Playback, position: Double)?
        /// The sleep timer, and whether its fade-out is under way (`Player+Sleep`).
        var sleep: SleepPlan?
        var sleepFading = false
        /// Announcements over playback (`Player+Announce`), and the engine item of the clip
        /// playing (nil while what plays fades out before it).
        var announcements = AnnouncementOverlay()
        var announcementEngineID: Int?
        /// The item reopened after announcements, and where, until it is ready: what status and
        /// the saved state say of its position meanwhile.
        var comingBack: (engineID: Int, position: Double)?
        /// A jump waiting while what plays fades out (`Player+ManualFade.swift`).
        var manualFade: ManualFade?
        /// A cast holding the room, and the queue set aside for it (`Player+Cast.swift`).
        var cast: CastHold?
        var castGeneration = 0
    }

    package init(
        engine: PlayerEngine, machine: PlaybackStateMachine = PlaybackStateMachine(), logger: Logger,
        volume: Int = 100, replayGain: ReplayGainSettings = ReplayGainSettings(),
        crossfade: CrossfadeSettings = CrossfadeSettings(),
        announcements: AnnouncementSettings = AnnouncementSettings()
    ) {
        self.engine = engine
        crossfadeSettings = crossfade
        announcementSettings = announcements
        self.machine = machine
        self.logger = logger
        let level = min(max(volume, 0), 100)
        model = Locked(Model(volume: level, replayGain: replayGain))
        alarms = AlarmClock(timer: timer, logger: logger)
        performance = PerformanceObserver()
        engine.setVolume(Self.factor(level))
        engine.setReplayGain(replayGain)
        let token = engine.observeEvents { [weak self] _, event in self?.handle(event) }
        tokens.withLock { $0 = [token] }
        performance.observe(engine)
        alarms.onRing { [weak self] alarm in self?.ring(alarm) }
        tags.onRead { [weak self] url in self?.tagsRead(url) }
        measureLoudness(store: nil, measuresLibrary: false)
    }

    /// Where measured loudness is kept (the library's database; nil: in memory only), and
    /// whether the library's songs are measured in the background too.
    package func measureLoudness(store: (any LoudnessStore)?, measuresLibrary: Bool) {
        loudness.configure(store: store, measuresLibrary: measuresLibrary, logger: logger) { [weak self] url, measurement in
            self?.loudnessMeasured(url, measurement)
        }
    }

    /// The library changed (a scan ended): its songs not measured yet are measured next.
    package func libraryChanged() { loudness.libraryChanged() }

    /// What is known of a file's loudness (nil: not measured yet).
    package func loudness(of url: URL) -> LoudnessMeasurement? { loudness.known(url) }

    // MARK: Reading

    package var state: PlaybackState { machine.currentState }

    /// How the output is driven (device, format, pacing), as configured.
    package var output: OutputConfiguration { engine.configuration }

    /// Which protocols an item may be opened with, and how network sources are read.
    package var input: InputConfiguration { engine.input }

    /// Frames written to the device since start (the watchdog's sign of life while playing).
    package var framesWritten: Int { engine.framesWritten }

    /// FFmpeg's and ALSA's versions, as linked.
    package static var libraryVersions: [String: String] { PlayerEngine.libraryVersions }

    /// Reads a local file's tags; nil when it cannot be opened as media. Blocks on file I/O:
    /// call it from a thread of its own, never the event loop or the cooperative pool.
    package static func readTags(_ url: URL) -> MediaTags? { MediaTags.read(url) }
    /// `readTags(_:)` for a path.
    package static func readTags(path: String) -> MediaTags? { MediaTags.read(path: path) }
    /// The picture a local file carries, read the same way. Blocks on file I/O.
    package static func readPicture(_ url: URL) -> EmbeddedPicture? { EmbeddedPicture.read(url) }

    package var changeObserver: PlayerChangeObserver? {
        get { changeObserverBox.withLock { $0.observer } }
        set { changeObserverBox.withLock { $0.observer = newValue } }
    }

    /// A position as clients see it: within [0, duration]. A decoder's first frame may sit
    /// before 0 (Opus's pre-skip), and its last after the stated duration (AAC's padding in MP4).
    static func shown(_ seconds: Double, duration: Double?) -> Double {
        min(max(0, seconds), duration ?? .infinity)
    }

    package var status: PlayerStatus {
        model.withLock { m in
            let state = machine.currentState
            let current = m.context.currentItem
            var position = 0.0
            var buffered = 0.0
            var media: MediaInfo?
            var loudness: ItemLoudness?
            if let current, state.isActive {
                let heard = engine.heardAndBuffered
                media = m.inPlay[current]?.media
                position = heard.itemID == current ? Self.shown(heard.seconds, duration: media?.duration) : 0
                buffered = heard.buffered
                loudness = itemLoudness(current, media: media, m)
            }
            if let standsAt = m.standsAt {
                position = standsAt
                // During announcements the item is out of the engine: what it is stays shown.
                if media == nil, let queueID = m.queue.currentID {
                    media = m.inPlay.values.first { $0.queueID == queueID }?.media
                }
            }
            var cover: URL?
            if let cast = m.cast, let url = m.queue.current?.url {
                media = media?.described(by: cast.tags[url])
                cover = cast.covers[url]
            }
            return PlayerStatus(
                state: state, position: position, buffered: buffered, duration: media?.duration, media: media,
                output: engine.configuration,
                interruption: state == .paused ? m.interruption : nil,
                current: m.queue.currentID, next: m.pendingNextQueueID ?? nextQueueID(m),
                queueVersion: m.queue.version, volume: m.volume, replayGain: m.replayGain,
                loudness: loudness, sleep: m.sleep,
                announcing: m.announcements.playing.map {
                    Announcing(url: $0.url, waiting: m.announcements.waiting.count, ducking: m.announcements.ducks)
                },
                deviceOpen: engine.isDeviceOpen, source: m.cast?.source ?? .queue, cover: cover)
        }
    }

    /// The loudness an engine item is leveled with, and its gain under the settings now.
    private func itemLoudness(_ engineID: Int, media: MediaInfo?, _ m: Model) -> ItemLoudness? {
        guard let queueID = m.inPlay[engineID]?.queueID, let item = m.queue.item(id: queueID) else { return nil }
        let (measurement, provisional, liveGain) = engine.loudnessInForce(for: engineID)
        var gain = m.replayGain.gain(
            tags: media?.replayGain, loudness: measurement,
            prefersAlbum: sharesAlbumWithNeighbour(item, m.queue), provisional: provisional)
        // Only local files are measured: a stream's is never pending; it may have a gain of its own.
        if !item.url.isFileURL && gain.source == .pending { gain.source = .none }
        if let liveGain {
            gain.decibels += liveGain
            gain.source = .live
        }
        return ItemLoudness(measured: measurement?.loudness, gain: gain)
    }

    package var queue: PlayQueue { model.withLock { $0.queue } }

    /// Whether `play` would start the queue (stopped, or after a failure a queue skips) rather
    /// than resume: then it waits for the item to open.
    package var playStartsQueue: Bool {
        model.withLock { m in
            // During a cast, a local play ends it and starts the queue given back.
            if m.cast != nil { return true }
            guard m.queue.currentID ?? m.queue.first != nil else { return false }
            return machine.currentState == .idle
        }
    }

    /// The queue item that plays after the current one, by the queue's options.
    func nextQueueID(_ m: Model) -> Int? {
        guard let current = m.queue.currentID else { return m.queue.first }
        return m.queue.next(after: current)
    }

    package func transitions() -> AsyncStream<PlaybackTransition> { machine.transitions() }
    package func performanceEvents() -> AsyncStream<PerformanceEvent> { performance.events() }
    package func queueEventStream() -> AsyncStream<QueueEvent> { queueEvents.subscribe() }
    package func settingsEventStream() -> AsyncStream<SettingsEvent> { settingsEvents.subscribe() }

    func publishQueue(_ m: Model) {
        queueEvents.yield(.queue(version: m.queue.version))
    }

    /// Makes a queue edit, and records it for the state journal if it changed the queue. Lock held.
    @discardableResult
    func edit(_ m: inout Model, _ edit: QueueEdit) throws(QueueError) -> [QueueItem] {
        let before = m.queue.version
        let added = try m.queue.apply(edit)
        if m.queue.version != before { changes.record(.queue(edit: edit)) }
        return added
    }

    /// Stops playback and waits until the device is closed (shutdown).
    package func shutdown() async {
        // The state as it stands is the one to keep, not the stop that follows.
        await changeObserver?.playerWillShutDown()
        _ = try? stop()
        tags.shutdown()
        loudness.shutdown()
        timer.finish()
        alarms.shutdown()
        engine.shutdown()
        await engine.waitUntilShutDown()
    }
}
