import Foundation
import Logging
import TonearmCore
import TonearmMedia
import TonearmPlayer

/// The renderer's actions on the player, one at a time (an actor): SOAP requests of every
/// control point come here, and the player's news too, so the cast's record and what events
/// say follow one order. Everything a cast does goes through the player's cast commands
/// (`Player+Cast.swift`): the player owns the queue, the state and the give-back.
actor Renderer {
    let player: Player
    let settings: UPnPSettings
    let sinkProtocolInfo: String
    let events: EventHub
    let logger: Logger
    /// The cast this renderer started, as the control point described it (nil: none).
    private var record: CastRecord?
    /// The volume before Mute (nil: not muted). Mute is the renderer's: the player's volume
    /// goes to 0 and comes back.
    private var mutedLevel: Int?
    private var lastActivity = ContinuousClock.now
    /// The player played at the last `refresh`.
    private var wasPlaying = false
    private var releaseTask: Task<Void, Never>?

    init(player: Player, settings: UPnPSettings, sinkProtocolInfo: String, events: EventHub, logger: Logger) {
        self.player = player
        self.settings = settings
        self.sinkProtocolInfo = sinkProtocolInfo
        self.events = events
        self.logger = logger
    }

    // MARK: What control points see

    func view() -> TransportView {
        let status = player.status
        if record != nil, status.source == .queue { record = nil }
        return TransportView(
            .init(
                cast: record, state: status.state, position: status.position, duration: status.duration,
                live: status.media?.isLive ?? false, volume: mutedLevel ?? status.volume, muted: mutedLevel != nil))
    }

    /// The player changed: the record follows a gapless join to the next URI, and subscribers
    /// hear what changed.
    func refresh() {
        let status = player.status
        // A cast that plays holds the room however long it goes untouched: the wait for its
        // release starts when it stops playing.
        let playing = status.state == .playing || status.state.isResumingPlaying
        if wasPlaying && !playing { lastActivity = .now }
        wasPlaying = playing
        if var cast = record {
            if status.source == .queue {
                record = nil
                // The room is the user's again: a control point's mute does not stay behind.
                if let level = mutedLevel {
                    mutedLevel = nil
                    _ = player.setVolume(level: level)
                }
            } else if !cast.nextURI.isEmpty, let current = status.current,
                player.queue.item(id: current)?.url.absoluteString == cast.nextURI
            {
                cast.uri = cast.nextURI
                cast.metadata = cast.nextMetadata
                cast.nextURI = ""
                cast.nextMetadata = ""
                record = cast
            }
        }
        if mutedLevel != nil, status.volume != 0 { mutedLevel = nil }
        let shown = view()
        events.publish(.avTransport, shown.avTransport)
        events.publish(.renderingControl, shown.renderingControl)
        events.publish(.connectionManager, connectionManagerVariables)
    }

    var connectionManagerVariables: [(String, String)] {
        [("SourceProtocolInfo", ""), ("SinkProtocolInfo", sinkProtocolInfo), ("CurrentConnectionIDs", "0")]
    }

    // MARK: Actions

    func perform(_ service: RendererService, _ request: SOAPRequest, from peer: String) async throws(UPnPError) -> [(String, String)] {
        guard let spec = service.action(request.action) else { throw .invalidAction(request.action) }
        for (name, _) in spec.inputs where request.arguments[name] == nil {
            throw .invalidArgs("\(request.action) needs \(name)")
        }
        if let instance = request.arguments["InstanceID"], instance.trimmingSpace != "0" { throw .invalidInstanceID }
        if service == .renderingControl, let channel = request.arguments["Channel"], channel.trimmingSpace != "Master" {
            throw .invalidArgs("channel '\(channel)' is not Master")
        }
        lastActivity = .now
        // Even an action that fails (a first URI that does not open) may leave a cast holding
        // the room: the release is armed whatever happened.
        defer { armRelease() }
        let arguments = request.arguments
        let result: [(String, String)]
        switch (service, request.action) {
        case (.avTransport, "SetAVTransportURI"):
            try await setURI(arguments["CurrentURI"] ?? "", metadata: arguments["CurrentURIMetaData"] ?? "", from: peer)
            result = []
        case (.avTransport, "SetNextAVTransportURI"):
            try setNextURI(arguments["NextURI"] ?? "", metadata: arguments["NextURIMetaData"] ?? "", from: peer)
            result = []
        case (.avTransport, "Play"):
            guard arguments["Speed"]?.trimmingSpace == "1" else {
                throw UPnPError(code: 717, description: "Play speed not supported: \(arguments["Speed"] ?? "")")
            }
            guard record != nil else { throw .notAvailable("no media: set a URI first") }
            do { _ = try await player.castPlay() } catch { throw Self.upnp(error) }
            result = []
        case (.avTransport, "Pause"):
            guard record != nil else { throw .notAvailable("no media to pause") }
            do {
                try player.requireCast()
                _ = try player.pause()
            } catch { throw Self.upnp(error) }
            result = []
        case (.avTransport, "Stop"):
            // With no cast, Stop changes nothing here (Home Assistant sends it before every cast).
            if record != nil || player.source != .queue {
                record = nil
                await player.endCast("Stop from \(peer)")
            }
            result = []
        case (.avTransport, "Seek"):
            try await seek(unit: arguments["Unit"] ?? "", target: arguments["Target"] ?? "")
            result = []
        case (.avTransport, "Next"):
            guard let cast = record, !cast.nextURI.isEmpty else { throw .notAvailable("no next URI") }
            do { _ = try await player.castSkip() } catch { throw Self.upnp(error) }
            result = []
        case (.avTransport, "Previous"):
            guard record != nil else { throw .notAvailable("no media") }
            do {
                try player.requireCast()
                _ = try await player.seek(to: 0)
            } catch { throw Self.upnp(error) }
            result = []
        case (.avTransport, "SetPlayMode"):
            let mode = arguments["NewPlayMode"]?.trimmingSpace ?? ""
            guard mode == "NORMAL" else { throw .playModeNotSupported(mode) }
            result = []
        case (.avTransport, _):
            result = query(spec, view: view(), status: player.status)
        case (.renderingControl, "SetVolume"):
            guard let level = Int(arguments["DesiredVolume"]?.trimmingSpace ?? ""), Bounds.volume.contains(level) else {
                throw .invalidArgs("DesiredVolume must be 0 to 100")
            }
            if mutedLevel != nil { mutedLevel = level } else { _ = player.setVolume(level: level) }
            refresh()
            result = []
        case (.renderingControl, "SetMute"):
            let value = arguments["DesiredMute"]?.trimmingSpace.lowercased() ?? ""
            guard ["0", "1", "true", "false", "yes", "no"].contains(value) else { throw .invalidArgs("DesiredMute must be 0 or 1") }
            try setMute(["1", "true", "yes"].contains(value))
            result = []
        case (.renderingControl, "SelectPreset"):
            guard arguments["PresetName"]?.trimmingSpace == "FactoryDefaults" else {
                throw UPnPError(code: 701, description: "Invalid Name: no such preset")
            }
            try setMute(false)
            result = []
        case (.renderingControl, _):
            result = query(spec, view: view(), status: player.status)
        case (.connectionManager, "GetCurrentConnectionInfo"):
            guard arguments["ConnectionID"]?.trimmingSpace == "0" else {
                throw UPnPError(code: 706, description: "Invalid connection reference")
            }
            result = [
                ("RcsID", "0"), ("AVTransportID", "0"), ("ProtocolInfo", ""), ("PeerConnectionManager", ""),
                ("PeerConnectionID", "-1"), ("Direction", "Input"), ("Status", "OK"),
            ]
        case (.connectionManager, _):
            result = query(spec, view: view(), status: player.status)
        }
        return result
    }

    /// A Get action: its outputs read from the state variables they are tied to.
    private func query(_ spec: ActionSpec, view: TransportView, status: PlayerStatus) -> [(String, String)] {
        let casting = record != nil
        let position = casting ? TransportView.time(status.position) : "0:00:00"
        var values: [String: String] = [:]
        for (name, value) in view.avTransport { values[name] = value }
        for (name, value) in view.renderingControl { values[name] = value }
        for (name, value) in connectionManagerVariables { values[name] = value }
        values["RelativeTimePosition"] = position
        values["AbsoluteTimePosition"] = position
        values["RelativeCounterPosition"] = "2147483647"
        values["AbsoluteCounterPosition"] = "2147483647"
        values["PossiblePlaybackStorageMedia"] = "NETWORK"
        values["PossibleRecordStorageMedia"] = "NOT_IMPLEMENTED"
        values["PossibleRecordQualityModes"] = "NOT_IMPLEMENTED"
        values["RecordStorageMedium"] = "NOT_IMPLEMENTED"
        values["RecordMediumWriteStatus"] = "NOT_IMPLEMENTED"
        values["CurrentRecordQualityMode"] = "NOT_IMPLEMENTED"
        return spec.outputs.map { ($0.name, values[$0.variable] ?? "") }
    }

    private func setURI(_ given: String, metadata: String, from peer: String) async throws(UPnPError) {
        let uri = given.trimmingSpace
        if uri.isEmpty {
            // An empty URI clears the transport: the cast ends.
            record = nil
            await player.endCast("an empty URI from \(peer)")
            return
        }
        let url = try checked(uri, from: peer)
        let didl = try DIDLMetadata.read(metadata)
        do {
            _ = try await player.cast(url, tags: didl.tags, cover: cover(didl, from: peer), from: peer)
        } catch {
            // The item that failed stays the cast's (STOPPED, ERROR_OCCURRED): the control point may set another.
            record = CastRecord(uri: uri, metadata: metadata)
            throw Self.upnp(error)
        }
        record = CastRecord(uri: uri, metadata: metadata)
        logger.info("cast", metadata: ["from": "\(peer)", "uri": "\(uri)"])
    }

    private func setNextURI(_ given: String, metadata: String, from peer: String) throws(UPnPError) {
        guard var cast = record else { throw .notAvailable("no current URI: SetAVTransportURI first") }
        let uri = given.trimmingSpace
        let url = uri.isEmpty ? nil : try checked(uri, from: peer)
        let didl = try DIDLMetadata.read(metadata)
        do { try player.castNext(url, tags: didl.tags, cover: cover(didl, from: peer)) } catch { throw Self.upnp(error) }
        cast.nextURI = uri
        cast.nextMetadata = uri.isEmpty ? "" : metadata
        record = cast
        logger.info("next URI", metadata: ["uri": "\(uri)"])
    }

    /// A URI a cast may open: `upnp.protocols` only (http and https by default), never a file.
    static func isLoopback(_ address: String) -> Bool { address.hasPrefix("127.") || address == "::1" }

    /// Hosts only this machine reaches: loopback, "localhost", the unspecified address, link-local.
    static func isLocalOnly(_ host: String) -> Bool {
        let name = host.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "[]."))
        return isLoopback(name) || name == "localhost" || name.hasSuffix(".localhost") || name == "0.0.0.0" || name == "::"
            || name.hasPrefix("169.254.") || name.hasPrefix("fe80:") || name.hasPrefix("0.")
    }

    private func checked(_ uri: String, from peer: String) throws(UPnPError) -> URL {
        guard uri.utf8.count <= 8192, let url = URL(string: uri), let scheme = url.scheme?.lowercased(), url.host != nil else {
            throw .resourceNotFound("'\(uri.prefix(200))' is not a URL")
        }
        guard settings.protocols.contains(scheme) else {
            throw .resourceNotFound("\(scheme) URLs are not played from the network (upnp.protocols)")
        }
        // This machine's own services are not the network's to reach through a cast.
        if !Self.isLoopback(peer), Self.isLocalOnly(url.host ?? "") {
            throw .resourceNotFound("\(url.host ?? "") is this machine or link-local: not opened for another machine")
        }
        return url
    }

    /// The cover the metadata names, if the daemon may fetch it for the front-ends: a URL a cast
    /// may open, over http or https only. Another is left out (the item plays without a cover).
    private func cover(_ didl: DIDLMetadata, from peer: String) -> URL? {
        guard let uri = didl.albumArtURI else { return nil }
        do throws(UPnPError) {
            let url = try checked(uri, from: peer)
            guard ["http", "https"].contains(url.scheme?.lowercased() ?? "") else {
                throw .resourceNotFound("a cover is fetched over http or https only")
            }
            return url
        } catch {
            logger.info(
                "the cover a control point names is left out", metadata: ["uri": "\(uri.prefix(200))", "why": "\(error.description)"])
            return nil
        }
    }

    private func seek(unit given: String, target given2: String) async throws(UPnPError) {
        guard record != nil else { throw .notAvailable("no media to seek") }
        let unit = given.trimmingSpace
        let target = given2.trimmingSpace
        let seconds: Double
        switch unit {
        case "REL_TIME", "ABS_TIME":
            guard let parsed = DIDLMetadata.seconds(target) else { throw .illegalSeekTarget(target) }
            seconds = parsed
        case "TRACK_NR":
            guard target == "1" else { throw .illegalSeekTarget(target) }
            seconds = 0
        default:
            throw .seekModeNotSupported
        }
        if let duration = player.status.duration, seconds > duration { throw .illegalSeekTarget(target) }
        do {
            try player.requireCast()
            _ = try await player.seek(to: seconds)
        } catch { throw Self.upnp(error) }
    }

    private func setMute(_ mute: Bool) throws(UPnPError) {
        if mute, mutedLevel == nil {
            mutedLevel = player.status.volume
            _ = player.setVolume(level: 0)
        } else if !mute, let level = mutedLevel {
            mutedLevel = nil
            _ = player.setVolume(level: level)
        }
        refresh()
    }

    /// A player's refusal in UPnP's words.
    static func upnp(_ error: PlayerError) -> UPnPError {
        switch error {
        case .rejected(let state, let action):
            return .notAvailable("\(action) is not possible while \(state)")
        case .superseded:
            return .actionFailed("another command came first")
        case .invalid(let why):
            return .actionFailed(why)
        case .failed(let failure):
            switch failure.kind {
            case .fileNotFound, .network, .permissionDenied: return .resourceNotFound(failure.message)
            case .unsupportedFormat, .noAudioStream: return .illegalMIMEType(failure.message)
            default: return .actionFailed(failure.message)
            }
        }
    }

    // MARK: Giving the room back

    /// While a cast holds the room, one task waits for the moment it has gone untouched (no
    /// action, no live subscription, not playing) for `upnp.release_after_s`, then ends it. No
    /// cast: no task. A control point that left while its cast plays leaves it playing: a
    /// local command takes the room back at once.
    private func armRelease() {
        guard record != nil || player.source != .queue else {
            releaseTask?.cancel()
            releaseTask = nil
            return
        }
        guard releaseTask == nil else { return }
        releaseTask = Task { [weak self] in await self?.waitForRelease() }
    }

    private func waitForRelease() async {
        while !Task.isCancelled {
            let quiet = Duration.seconds(settings.releaseAfterSeconds)
            let state = player.state
            if state == .playing || state.isResumingPlaying { lastActivity = .now }
            var deadline = lastActivity + quiet
            if let subscribed = events.latestExpiry() { deadline = max(deadline, subscribed + quiet) }
            if deadline <= .now {
                releaseTask = nil
                guard record != nil || player.source != .queue else { return }
                record = nil
                await player.endCast("no control point touched it for \(Int(settings.releaseAfterSeconds)) s")
                refresh()
                return
            }
            try? await Task.sleep(until: deadline, clock: .continuous)
        }
    }

    func shutdown() {
        releaseTask?.cancel()
        releaseTask = nil
    }
}
