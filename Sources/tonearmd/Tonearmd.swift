import ArgumentParser
import Foundation
import Logging
import ServiceLifecycle
import TonearmEngine
import TonearmFrontEnd
import TonearmLibrary
import TonearmMedia
import TonearmPlayer
import TonearmProtocol
import TonearmServer
import TonearmUPnP

@main
struct Tonearmd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tonearmd",
        abstract: "Headless audio player daemon, driven over a Unix-socket JSON-RPC protocol.",
        discussion: """
            Settings come from the built-in default (config/tonearmd.toml), then --config, then TONEARM_* \
            environment variables, then these flags.
            """,
        version: TonearmVersion.string)

    @Option(help: "TOML config file (default: the built-in config).")
    var config: String?

    @Option(help: "Control socket path.")
    var socket: String?

    @Option(help: "ALSA PCM device, e.g. default, hw:0,0, null, file:'/tmp/out.raw',raw.")
    var device: String?

    @Flag(inversion: .prefixedNo, help: "Keep real time ourselves (for devices that never block: null, file).")
    var pace: Bool?

    @Option(parsing: .unconditional, help: "Pacing speed factor (tests).")
    var speed: Double?

    @Option(name: .customLong("buffer-ms"), parsing: .unconditional, help: "ALSA buffer time in milliseconds.")
    var bufferMilliseconds: Int?

    @Option(name: .customLong("reopen-interval-ms"), parsing: .unconditional, help: "How often to retry a lost device, in milliseconds.")
    var reopenIntervalMilliseconds: Int?

    @Option(name: .customLong("open-timeout-ms"), parsing: .unconditional, help: "How long a device open may take, in milliseconds.")
    var openTimeoutMilliseconds: Int?

    @Flag(
        name: .customLong("wait-for-device"), inversion: .prefixedNo,
        help: "Let an item whose device is missing or busy wait for it, instead of failing the load.")
    var waitForDevice: Bool?

    @Flag(
        name: .customLong("pause-fade"), inversion: .prefixedNo,
        help: "Fade out over 5 ms on pause and in on play (no click), instead of stopping at once.")
    var pauseFade: Bool?

    @Flag(
        name: .customLong("resume-after-interruption"), inversion: .prefixedNo,
        help: "Resume playback once a lost device is back.")
    var resumeAfterInterruption: Bool?

    @Option(help: "The web remote's address (http.bind), e.g. 127.0.0.1:6680; off: no web remote.")
    var http: String?

    @Option(name: .customLong("state-directory"), help: "Where the state file (state.json) is kept.")
    var stateDirectory: String?

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error, critical.")
    var logLevel: String?

    func resolvedConfiguration() throws -> DaemonConfiguration {
        var settings = DaemonConfiguration.embeddedDefault()
        if let config { settings = try settings.applying(tomlFile: config) }
        settings = try settings.applying(environment: ProcessInfo.processInfo.environment)
        if let socket {
            guard !socket.isEmpty else { throw ValidationError("--socket needs a path; leave it out for the default") }
            settings.socket = socket
        }
        if let device { settings.output.device = device }
        if let pace { settings.output.pace = pace }
        if let speed {
            guard speed.isFinite, speed > 0, speed <= 1000 else { throw ValidationError("--speed must be above 0 and at most 1000") }
            settings.output.speed = speed
        }
        if let bufferMilliseconds {
            guard Bounds.bufferMilliseconds.contains(bufferMilliseconds) else {
                throw ValidationError(
                    "--buffer-ms must be from \(Bounds.bufferMilliseconds.lowerBound) to \(Bounds.bufferMilliseconds.upperBound)")
            }
            settings.output.bufferMilliseconds = bufferMilliseconds
        }
        if let reopenIntervalMilliseconds {
            guard (100...600_000).contains(reopenIntervalMilliseconds) else {
                throw ValidationError("--reopen-interval-ms must be from 100 to 600000")
            }
            settings.output.reopenIntervalMilliseconds = reopenIntervalMilliseconds
        }
        if let openTimeoutMilliseconds {
            guard (100...600_000).contains(openTimeoutMilliseconds) else {
                throw ValidationError("--open-timeout-ms must be from 100 to 600000")
            }
            settings.output.openTimeoutMilliseconds = openTimeoutMilliseconds
        }
        if let waitForDevice { settings.output.waitForDevice = waitForDevice }
        if let pauseFade { settings.output.fadesOnPause = pauseFade }
        if let resumeAfterInterruption { settings.output.resumeAfterInterruption = resumeAfterInterruption }
        if let http {
            if http == "off" {
                settings.http.enabled = false
            } else {
                guard let address = TCPAddress(http) else {
                    throw ValidationError("--http must be host:port such as 127.0.0.1:6680, or off; not '\(http)'")
                }
                settings.http.enabled = true
                settings.http.bind = address
            }
        }
        if let stateDirectory {
            guard stateDirectory.hasPrefix("/") else { throw ValidationError("--state-directory needs an absolute path") }
            settings.stateDirectory = stateDirectory
        }
        if let logLevel { settings.logLevel = try DaemonConfiguration.logLevel(logLevel, "--log-level") }
        return settings
    }

    func run() async throws {
        let settings: DaemonConfiguration
        do { settings = try resolvedConfiguration() } catch let error as DaemonConfiguration.Invalid {
            throw ValidationError(error.description)
        }
        let level = settings.logLevel
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "tonearmd")
        if let config, let exposure = DaemonConfiguration.passwordExposure(configFile: config) { logger.warning("\(exposure)") }
        // settings.socket already holds --socket, TONEARM_SOCKET or the config's value, in that order.
        // systemd's side (read once, and removed from the environment): readiness and watchdog
        // messages, and sockets passed by socket activation.
        let notifier = SystemdNotifier()
        let inherited = InheritedSockets()
        var socketPath = SocketPath.resolve(
            explicit: settings.socket, environment: ProcessInfo.processInfo.environment,
            configured: nil)
        if let control = inherited.control {
            socketPath = InheritedSockets.path(of: control.descriptor) ?? "(socket from systemd, fd \(control.descriptor))"
            for other in inherited.sockets where other != control && other != inherited.mpd {
                logger.warning("ignoring a socket systemd passed", metadata: ["fd": "\(other.descriptor)", "name": "\(other.name)"])
            }
        }
        // A Unix socket's path holds at most 107 bytes: a longer one is a usage error, said on
        // stderr with exit 64 like every other bad start, not a log line after starting.
        if inherited.control == nil, socketPath.utf8.count > 107 {
            throw ValidationError(
                "the socket path is \(socketPath.utf8.count) bytes, longer than a Unix socket allows (107): \(socketPath)")
        }
        var mpd = settings.mpd
        if inherited.mpd == nil, mpd.enabled, mpd.inherited == nil {
            let mpdPath = mpd.socketPath(beside: socketPath)
            if mpdPath.utf8.count > 107 {
                throw ValidationError(
                    "the MPD socket path is \(mpdPath.utf8.count) bytes, longer than a Unix socket allows (107): \(mpdPath)")
            }
        }
        if let socket = inherited.mpd {
            mpd.inherited = socket.descriptor
            mpd.socket = InheritedSockets.path(of: socket.descriptor) ?? "(socket from systemd, fd \(socket.descriptor))"
        }
        if let refusal = mpd.refusal(with: settings.security)
            ?? settings.http.refusal(with: settings.security, mpdPassword: mpd.enabled ? mpd.password : nil)
        {
            logger.critical("\(refusal)")
            throw ExitCode.failure
        }
        let output = settings.engineOutput
        logger.info(
            "starting",
            metadata: [
                "device": "\(output.device)", "pace": "\(output.pace)", "speed": "\(output.speed)",
                "buffer_ms": "\(output.bufferMilliseconds)", "reopen_interval_ms": "\(output.reopenIntervalMilliseconds)",
                "open_timeout_ms": "\(output.openTimeoutMilliseconds)",
            ])
        // SIGHUP (a closed terminal, or a reload by habit) must not kill the daemon without
        // cleanup: it is ignored; there is no configuration reload yet.
        signal(SIGHUP, SIG_IGN)
        let engine = PlayerEngine(configuration: output, input: settings.input)
        let player = Player(
            engine: engine, logger: logger, volume: settings.volume, replayGain: settings.replayGain,
            crossfade: settings.crossfade, announcements: settings.announcements)
        let stateFile = StateFile(
            directory: settings.stateDirectory
                ?? StateFile.defaultDirectory(
                    environment: ProcessInfo.processInfo.environment, isRoot: geteuid() == 0))
        // One daemon per state directory; held until the process ends.
        var stateLock: StateDirectoryLock?
        do throws(StateDirectoryLock.Failure) {
            stateLock = try StateDirectoryLock(for: stateFile)
        } catch .held(let path, let pid) {
            let message = StateDirectoryLock.Failure.held(path: path, pid: pid).description
            logger.critical("\(message)")
            FileHandle.standardError.write(Data("tonearmd: \(message)\n".utf8))
            throw ExitCode.failure
        } catch {
            logger.warning("cannot lock the state directory; the state may not be saved", metadata: ["error": "\(error)"])
        }
        defer { withExtendedLifetime(stateLock) {} }
        for notice in settings.notices { logger.warning("\(notice)") }
        let library = openLibrary(settings, stateDirectory: stateFile.directory, logger: logger)
        // A scan in progress ends with its current batch; the next start goes on from there.
        defer { library?.shutdown() }
        // Measured loudness is kept in the library's database (in memory only without one);
        // its songs are measured after each scan that changed them.
        player.measureLoudness(store: library, measuresLibrary: settings.library.measureLoudness)
        let libraryNews = library.map { library in
            let stream = library.subscribe()
            return Task {
                for await news in stream {
                    if case .updateFinished(_, let outcome) = news, outcome.changedAnything { player.libraryChanged() }
                }
            }
        }
        defer { libraryNews?.cancel() }
        if settings.library.scanOnStart { _ = try? library?.update() }
        if settings.library.watch { library?.startWatching() }
        let saved = restoreState(player, from: stateFile, resume: settings.resume, logger: logger)
        await player.alarms.keep(in: stateFile.directory)
        let keeper =
            saved.writable
            ? StateKeeper(player: player, file: stateFile, interval: settings.saveIntervalSeconds, logger: logger) : nil
        keeper?.start()
        // The player holds the keeper weakly: it lives until the daemon leaves run().
        defer { withExtendedLifetime(keeper) {} }
        // A cast that held the room when the daemon stopped ends now: its queue comes back.
        let castHeld = player.keepCasts(in: stateFile.directory)
        // The current item is loaded while the daemon already serves: a station that does not
        // answer delays no socket and no readiness.
        let resume =
            castHeld
            ? Task { await player.endCast("the daemon started again") }
            : saved.state.map { state in Task { await player.resume(state, mode: settings.resume) } }
        defer { resume?.cancel() }
        let watchdog = notifier.watchdogInterval.map { interval in
            Watchdog(interval: interval, player: player, logger: logger) { notifier.send("WATCHDOG=1") }
        }
        let server = ControlServer(
            socketPath: socketPath, player: player, logger: logger, maxClients: settings.maxClients,
            inherited: inherited.control?.descriptor,
            ready: { notifier.send("READY=1\nSTATUS=\(Self.describe(player))") },
            stopping: { notifier.send("STOPPING=1\nSTATUS=stopping") },
            watchdog: watchdog, security: settings.security, mpd: mpd, library: library,
            playlists: PlaylistStore(directory: settings.library.playlistDirectory ?? stateFile.directory + "/playlists"),
            limits: settings.controlLimits, http: settings.http,
            upnp: settings.upnp.enabled
                ? UPnPRenderer(
                    settings: settings.upnp, player: player, stateDirectory: stateFile.directory,
                    sinkTypes: DecodableTypes.audio(), logger: logger) : nil)
        let statusUpdates =
            notifier.isActive
            ? Task {
                for await _ in player.transitions() { notifier.send("STATUS=\(Self.describe(player))") }
            } : nil
        defer { statusUpdates?.cancel() }
        let group = ServiceGroup(
            configuration: .init(
                services: [.init(service: server)],
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger))
        do {
            try await group.run()
        } catch let error as ServerError {
            logger.critical("\(error.description)")
            throw ExitCode.failure
        }
    }

    /// The music library on `library.music_directory` (or the first of `input.roots`), its
    /// database in the state directory. Without a music directory there is none; a database
    /// that cannot be opened leaves the daemon without one too, said once in the log.
    private func openLibrary(_ settings: DaemonConfiguration, stateDirectory: String, logger: Logger) -> Library? {
        guard let configured = settings.library.musicDirectory ?? settings.security.roots.paths.first else { return nil }
        var configuration = settings.library
        configuration.musicDirectory = MediaRoots.resolve(configured)
        do {
            return try Library(
                configuration: configuration, databasePath: stateDirectory + "/library.sqlite",
                logger: Logger(label: "tonearmd")
            ) { Player.readTags(path: $0) }
        } catch {
            logger.error(
                "the music library cannot be opened; MPD clients see the music directory without a database",
                metadata: ["directory": "\(configured)", "error": "\(error)"])
            return nil
        }
    }

    /// Brings back what the state file holds (the queue and settings; the caller resumes the
    /// item). A file that cannot be a state, or cannot be read, is moved aside and the daemon
    /// starts empty: a bad file never stops it (no crash loop), and is never written over. Where
    /// it cannot even be moved, the daemon runs without saving (`writable` false).
    private func restoreState(_ player: Player, from file: StateFile, resume: ResumeMode, logger: Logger)
        -> (state: SavedPlayerState?, writable: Bool)
    {
        let journal = StateJournal(directory: file.directory)
        switch file.load() {
        case .none:
            // No snapshot, but maybe a journal (a crash before the first snapshot): its changes
            // are replayed onto the state the daemon starts with.
            var fresh = player.savedState
            let replay = journal.replay(onto: &fresh)
            report(replay, journal, logger)
            if replay.applied > 0 {
                player.restore(fresh, resuming: resume)
                return (fresh, true)
            }
            logger.info("no saved state yet", metadata: ["file": "\(file.path)"])
        case .state(var saved):
            let replay = journal.replay(onto: &saved)
            report(replay, journal, logger)
            logger.info(
                "resuming",
                metadata: [
                    "file": "\(file.path)", "items": "\(saved.queue.items.count)",
                    "position": "\(saved.position)", "journaled_changes": "\(replay.applied)",
                ])
            player.restore(saved, resuming: resume)
            return (saved, true)
        case .setAside(let reason, let keptAs):
            logger.error(
                "the saved state is unusable; starting empty",
                metadata: [
                    "file": "\(file.path)", "reason": "\(reason)", "kept_as": "\(keptAs)",
                ])
        case .stuck(let reason, let renameError):
            logger.critical(
                "the saved state is unusable and cannot be moved aside; starting empty, and saving nothing until it is fixed",
                metadata: [
                    "file": "\(file.path)", "reason": "\(reason)", "rename_error": "\(renameError)",
                ])
            return (nil, false)
        }
        return (nil, true)
    }

    /// Says what the journal's replay found, when it found anything worth saying.
    private func report(_ replay: StateJournal.Replay, _ journal: StateJournal, _ logger: Logger) {
        if replay.droppedTornLine {
            logger.notice(
                "the state journal ends in a change cut short by a crash (never acknowledged); it is dropped",
                metadata: ["file": "\(journal.path)"])
        }
        guard let problem = replay.problem else { return }
        logger.error(
            "the state journal is damaged; its changes up to the damage are kept",
            metadata: [
                "file": "\(journal.path)", "reason": "\(problem)", "applied": "\(replay.applied)",
                "kept_as": "\(replay.keptAs ?? "(cannot be moved aside)")",
            ])
    }

    /// What `systemctl status` shows: the state, and what is playing.
    static func describe(_ player: Player) -> String {
        let status = player.status
        let state = status.state.name
        guard let media = status.media else { return state }
        let name = [media.artist, media.title].compactMap { $0 }.joined(separator: " – ")
        return "\(state): \(name.isEmpty ? (media.url as NSString).lastPathComponent : name)"
    }
}
