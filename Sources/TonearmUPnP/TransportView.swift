import TonearmCore

/// What the renderer knows of a cast besides the player: the URIs and the metadata the
/// control point sent, as it sent them (echoed back in GetMediaInfo, GetPositionInfo and events).
struct CastRecord: Sendable, Equatable {
    var uri: String
    var metadata: String
    var nextURI = ""
    var nextMetadata = ""
}

/// AVTransport and RenderingControl as a control point sees them, made from the player's state
/// and the cast's record. A pure function of its input: the table test holds every playback
/// state to its TransportState and CurrentTransportActions.
struct TransportView: Sendable, Equatable {
    struct Input: Sendable, Equatable {
        /// nil: no cast holds the room (NO_MEDIA_PRESENT).
        var cast: CastRecord?
        var state: PlaybackState
        var position: Double = 0
        var duration: Double?
        var live = false
        var volume: Int
        var muted: Bool
    }

    var transportState: String
    var transportStatus: String
    var actions: [String]
    var avTransport: [(String, String)]
    var renderingControl: [(String, String)]

    static func == (a: TransportView, b: TransportView) -> Bool {
        a.transportState == b.transportState && a.transportStatus == b.transportStatus && a.actions == b.actions
            && a.avTransport.elementsEqual(b.avTransport, by: ==) && a.renderingControl.elementsEqual(b.renderingControl, by: ==)
    }

    /// The state a control point sees for a playback state, while a cast holds the room.
    static func transportState(_ state: PlaybackState) -> String {
        switch state {
        case .playing, .buffering(.playing), .seeking(_, .playing): "PLAYING"
        case .paused, .buffering(.paused), .seeking(_, .paused): "PAUSED_PLAYBACK"
        case .loading: "TRANSITIONING"
        case .idle, .ready, .ended, .failed: "STOPPED"
        }
    }

    /// What may be asked now, true to the state (an empty list makes some control points think
    /// everything is allowed, so the list is only empty when nothing is).
    static func actions(_ transport: String, seekable: Bool, hasNext: Bool) -> [String] {
        var actions: [String]
        switch transport {
        case "PLAYING": actions = ["Pause", "Stop"] + (seekable ? ["Seek"] : [])
        case "PAUSED_PLAYBACK": actions = ["Play", "Stop"] + (seekable ? ["Seek"] : [])
        case "STOPPED": actions = ["Play", "Stop"]
        case "TRANSITIONING": actions = ["Stop"]
        default: actions = []
        }
        if hasNext, transport != "NO_MEDIA_PRESENT" { actions.append("Next") }
        return actions
    }

    /// H:MM:SS, as UPnP writes durations and positions (no fraction: control points parse only
    /// that, and Home Assistant's parser refuses more).
    static func time(_ seconds: Double?) -> String {
        guard let seconds, seconds.isFinite, seconds >= 0 else { return "0:00:00" }
        let whole = Int(seconds.rounded(.down))
        let hours = whole / 3600
        let minutes = (whole / 60) % 60
        let rest = whole % 60
        return "\(hours):\(minutes < 10 ? "0" : "")\(minutes):\(rest < 10 ? "0" : "")\(rest)"
    }

    init(_ input: Input) {
        let cast = input.cast
        if cast != nil {
            transportState = Self.transportState(input.state)
            if case .failed = input.state { transportStatus = "ERROR_OCCURRED" } else { transportStatus = "OK" }
        } else {
            transportState = "NO_MEDIA_PRESENT"
            transportStatus = "OK"
        }
        let seekable = !input.live && input.duration != nil
        actions = Self.actions(transportState, seekable: seekable, hasNext: !(cast?.nextURI.isEmpty ?? true))
        let duration = cast == nil ? "0:00:00" : Self.time(input.live ? nil : input.duration)
        avTransport = [
            ("TransportState", transportState), ("TransportStatus", transportStatus),
            ("PlaybackStorageMedium", cast == nil ? "NONE" : "NETWORK"), ("TransportPlaySpeed", "1"),
            ("CurrentPlayMode", "NORMAL"), ("NumberOfTracks", cast == nil ? "0" : "1"),
            ("CurrentTrack", cast == nil ? "0" : "1"), ("CurrentTrackDuration", duration), ("CurrentMediaDuration", duration),
            ("CurrentTrackURI", cast?.uri ?? ""), ("CurrentTrackMetaData", cast?.metadata ?? ""),
            ("AVTransportURI", cast?.uri ?? ""), ("AVTransportURIMetaData", cast?.metadata ?? ""),
            ("NextAVTransportURI", cast?.nextURI ?? ""), ("NextAVTransportURIMetaData", cast?.nextMetadata ?? ""),
            ("CurrentTransportActions", actions.joined(separator: ",")),
        ]
        renderingControl = [
            ("Volume", String(input.volume)), ("Mute", input.muted ? "1" : "0"),
            ("PresetNameList", "FactoryDefaults"),
        ]
    }

    /// `name`'s value in AVTransport.
    func avTransport(_ name: String) -> String { avTransport.first { $0.0 == name }?.1 ?? "" }
}
