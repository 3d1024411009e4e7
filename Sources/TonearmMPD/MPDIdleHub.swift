import NIOCore
import TonearmCore
import TonearmFrontEnd
import TonearmPlayer
import TonearmSync

/// MPD's idle subsystems (src/IdleFlags.cxx), in the order MPD names them.
struct MPDSubsystems: OptionSet, Sendable, Hashable {
    let rawValue: UInt16

    static let database = MPDSubsystems(rawValue: 1 << 0)
    static let storedPlaylist = MPDSubsystems(rawValue: 1 << 1)
    static let playlist = MPDSubsystems(rawValue: 1 << 2)
    static let player = MPDSubsystems(rawValue: 1 << 3)
    static let mixer = MPDSubsystems(rawValue: 1 << 4)
    static let output = MPDSubsystems(rawValue: 1 << 5)
    static let options = MPDSubsystems(rawValue: 1 << 6)
    static let partition = MPDSubsystems(rawValue: 1 << 7)
    static let sticker = MPDSubsystems(rawValue: 1 << 8)
    static let subscription = MPDSubsystems(rawValue: 1 << 9)
    static let message = MPDSubsystems(rawValue: 1 << 10)
    static let neighbor = MPDSubsystems(rawValue: 1 << 11)
    static let mount = MPDSubsystems(rawValue: 1 << 12)
    static let update = MPDSubsystems(rawValue: 1 << 13)

    /// In MPD's bit order, which is also the order of `changed:` lines.
    static let named: [(name: String, flag: MPDSubsystems)] = [
        ("database", .database), ("stored_playlist", .storedPlaylist), ("playlist", .playlist), ("player", .player),
        ("mixer", .mixer), ("output", .output), ("options", .options), ("sticker", .sticker), ("update", .update),
        ("subscription", .subscription), ("message", .message), ("neighbor", .neighbor), ("mount", .mount),
        ("partition", .partition),
    ]

    static let all = MPDSubsystems(rawValue: (1 << 14) - 1)

    init(rawValue: UInt16) { self.rawValue = rawValue }

    /// A subsystem by its name, case-insensitive as in MPD; nil for an unknown name.
    init?(name: String) {
        guard let entry = Self.named.first(where: { $0.name.caseInsensitiveCompare(name) == .orderedSame }) else { return nil }
        self = entry.flag
    }

    var names: [String] { Self.named.filter { contains($0.flag) }.map(\.name) }
}

/// Hands the player's news to every MPD connection as idle flags. One task reads the player's
/// streams (transitions, queue, settings, device news) and posts each change to the event loops
/// the connections live on; the connections themselves are touched only on their own loop.
/// Nothing here polls: with no news, nothing runs.
final class MPDIdleHub: Sendable {
    private let clients = Locked<[ObjectIdentifier: NIOLoopBound<MPDSession>]>([:])
    private let pump = Locked<[Task<Void, Never>]>([])

    func register(_ handler: MPDSession, on eventLoop: any EventLoop) {
        let bound = NIOLoopBound(handler, eventLoop: eventLoop)
        clients.withLock { $0[ObjectIdentifier(handler)] = bound }
    }

    func unregister(_ handler: MPDSession) {
        clients.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(handler)) }
    }

    /// Tells every connection that `subsystems` changed.
    func post(_ subsystems: MPDSubsystems) {
        let snapshot = clients.withLock { Array($0.values) }
        // One hop per event loop, then each connection on its own loop.
        var byLoop: [ObjectIdentifier: (loop: any EventLoop, handlers: [NIOLoopBound<MPDSession>])] = [:]
        for bound in snapshot {
            byLoop[ObjectIdentifier(bound.eventLoop), default: (bound.eventLoop, [])].handlers.append(bound)
        }
        for (_, group) in byLoop {
            let handlers = group.handlers
            group.loop.execute {
                for bound in handlers { bound.value.subsystemsChanged(subsystems) }
            }
        }
    }

    /// Starts reading the player's news.
    func start(player: Player, environment: MPDEnvironment) {
        let transitions = player.transitions()
        let queueEvents = player.queueEventStream()
        let settings = player.settingsEventStream()
        let performance = player.performanceEvents()
        environment.stateChanged(to: player.state)
        let tasks = [
            Task { [weak self] in
                for await transition in transitions {
                    environment.stateChanged(to: transition.to)
                    self?.post(.player)
                }
            },
            Task { [weak self] in
                for await event in queueEvents {
                    switch event {
                    case .queue: self?.post(.playlist)
                    case .item, .itemFailed, .metadata: self?.post(.player)
                    }
                }
            },
            Task { [weak self] in
                for await event in settings {
                    switch event {
                    case .volume: self?.post(.mixer)
                    case .queueOptions, .replayGain: self?.post(.options)
                    }
                }
            },
            Task { [weak self] in
                guard let news = environment.library.database?.subscribe() else { return }
                for await item in news {
                    switch item {
                    case .updateStarted, .offline: self?.post(.update)
                    case .updateFinished(_, let outcome):
                        // Kept replies go before clients hear of the change and ask again.
                        if outcome.changedAnything { environment.replies.databaseChanged() }
                        self?.post(outcome.changedAnything ? [.update, .database] : .update)
                    }
                }
            },
            Task { [weak self] in
                for await event in performance {
                    switch event {
                    case .deviceLost, .deviceRestored: self?.post(.output)
                    default: break
                    }
                }
            },
        ]
        pump.withLock { $0 = tasks }
    }

    func stop() {
        let tasks = pump.withLock { tasks in
            defer { tasks = [] }
            return tasks
        }
        tasks.forEach { $0.cancel() }
    }
}
