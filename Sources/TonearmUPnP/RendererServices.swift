/// A state variable of a UPnP service, as its SCPD declares it.
struct StateVariable: Sendable {
    var name: String
    var type: String
    var evented = false
    var allowed: [String] = []
    var range: (minimum: Int, maximum: Int, step: Int)?
}

/// An action and its arguments, each tied to the state variable that types it.
struct ActionSpec: Sendable {
    var name: String
    var inputs: [(name: String, variable: String)] = []
    var outputs: [(name: String, variable: String)] = []
}

/// The three services of a MediaRenderer:1, declared once: the SCPDs are written from these,
/// and a request is checked against them (unknown action: 401; an argument missing: 402).
enum RendererService: String, Sendable, CaseIterable {
    case avTransport = "AVTransport"
    case renderingControl = "RenderingControl"
    case connectionManager = "ConnectionManager"

    var type: String { "urn:schemas-upnp-org:service:\(rawValue):1" }
    var id: String { "urn:upnp-org:serviceId:\(rawValue)" }
    var scpdPath: String { "/upnp/\(rawValue).xml" }
    var controlPath: String { "/upnp/control/\(rawValue)" }
    var eventPath: String { "/upnp/event/\(rawValue)" }

    /// Whether events carry `LastChange` (AVTransport and RenderingControl) or the variables
    /// themselves (ConnectionManager).
    var usesLastChange: Bool { self != .connectionManager }

    func action(_ name: String) -> ActionSpec? { actions.first { $0.name == name } }

    var actions: [ActionSpec] {
        let instance = ("InstanceID", "A_ARG_TYPE_InstanceID")
        switch self {
        case .avTransport:
            return [
                ActionSpec(
                    name: "SetAVTransportURI",
                    inputs: [instance, ("CurrentURI", "AVTransportURI"), ("CurrentURIMetaData", "AVTransportURIMetaData")]),
                ActionSpec(
                    name: "SetNextAVTransportURI",
                    inputs: [instance, ("NextURI", "NextAVTransportURI"), ("NextURIMetaData", "NextAVTransportURIMetaData")]),
                ActionSpec(
                    name: "GetMediaInfo", inputs: [instance],
                    outputs: [
                        ("NrTracks", "NumberOfTracks"), ("MediaDuration", "CurrentMediaDuration"), ("CurrentURI", "AVTransportURI"),
                        ("CurrentURIMetaData", "AVTransportURIMetaData"), ("NextURI", "NextAVTransportURI"),
                        ("NextURIMetaData", "NextAVTransportURIMetaData"), ("PlayMedium", "PlaybackStorageMedium"),
                        ("RecordMedium", "RecordStorageMedium"), ("WriteStatus", "RecordMediumWriteStatus"),
                    ]),
                ActionSpec(
                    name: "GetTransportInfo", inputs: [instance],
                    outputs: [
                        ("CurrentTransportState", "TransportState"), ("CurrentTransportStatus", "TransportStatus"),
                        ("CurrentSpeed", "TransportPlaySpeed"),
                    ]),
                ActionSpec(
                    name: "GetPositionInfo", inputs: [instance],
                    outputs: [
                        ("Track", "CurrentTrack"), ("TrackDuration", "CurrentTrackDuration"), ("TrackMetaData", "CurrentTrackMetaData"),
                        ("TrackURI", "CurrentTrackURI"), ("RelTime", "RelativeTimePosition"), ("AbsTime", "AbsoluteTimePosition"),
                        ("RelCount", "RelativeCounterPosition"), ("AbsCount", "AbsoluteCounterPosition"),
                    ]),
                ActionSpec(
                    name: "GetDeviceCapabilities", inputs: [instance],
                    outputs: [
                        ("PlayMedia", "PossiblePlaybackStorageMedia"), ("RecMedia", "PossibleRecordStorageMedia"),
                        ("RecQualityModes", "PossibleRecordQualityModes"),
                    ]),
                ActionSpec(
                    name: "GetTransportSettings", inputs: [instance],
                    outputs: [("PlayMode", "CurrentPlayMode"), ("RecQualityMode", "CurrentRecordQualityMode")]),
                ActionSpec(name: "Stop", inputs: [instance]),
                ActionSpec(name: "Play", inputs: [instance, ("Speed", "TransportPlaySpeed")]),
                ActionSpec(name: "Pause", inputs: [instance]),
                ActionSpec(name: "Seek", inputs: [instance, ("Unit", "A_ARG_TYPE_SeekMode"), ("Target", "A_ARG_TYPE_SeekTarget")]),
                ActionSpec(name: "Next", inputs: [instance]),
                ActionSpec(name: "Previous", inputs: [instance]),
                ActionSpec(name: "SetPlayMode", inputs: [instance, ("NewPlayMode", "CurrentPlayMode")]),
                ActionSpec(name: "GetCurrentTransportActions", inputs: [instance], outputs: [("Actions", "CurrentTransportActions")]),
            ]
        case .renderingControl:
            let channel = ("Channel", "A_ARG_TYPE_Channel")
            return [
                ActionSpec(name: "ListPresets", inputs: [instance], outputs: [("CurrentPresetNameList", "PresetNameList")]),
                ActionSpec(name: "SelectPreset", inputs: [instance, ("PresetName", "A_ARG_TYPE_PresetName")]),
                ActionSpec(name: "GetVolume", inputs: [instance, channel], outputs: [("CurrentVolume", "Volume")]),
                ActionSpec(name: "SetVolume", inputs: [instance, channel, ("DesiredVolume", "Volume")]),
                ActionSpec(name: "GetMute", inputs: [instance, channel], outputs: [("CurrentMute", "Mute")]),
                ActionSpec(name: "SetMute", inputs: [instance, channel, ("DesiredMute", "Mute")]),
            ]
        case .connectionManager:
            return [
                ActionSpec(name: "GetProtocolInfo", outputs: [("Source", "SourceProtocolInfo"), ("Sink", "SinkProtocolInfo")]),
                ActionSpec(name: "GetCurrentConnectionIDs", outputs: [("ConnectionIDs", "CurrentConnectionIDs")]),
                ActionSpec(
                    name: "GetCurrentConnectionInfo", inputs: [("ConnectionID", "A_ARG_TYPE_ConnectionID")],
                    outputs: [
                        ("RcsID", "A_ARG_TYPE_RcsID"), ("AVTransportID", "A_ARG_TYPE_AVTransportID"),
                        ("ProtocolInfo", "A_ARG_TYPE_ProtocolInfo"), ("PeerConnectionManager", "A_ARG_TYPE_ConnectionManager"),
                        ("PeerConnectionID", "A_ARG_TYPE_ConnectionID"), ("Direction", "A_ARG_TYPE_Direction"),
                        ("Status", "A_ARG_TYPE_ConnectionStatus"),
                    ]),
            ]
        }
    }

    var variables: [StateVariable] {
        func string(_ name: String, _ allowed: [String] = [], evented: Bool = false) -> StateVariable {
            StateVariable(name: name, type: "string", evented: evented, allowed: allowed)
        }
        switch self {
        case .avTransport:
            return [
                string("TransportState", ["STOPPED", "PLAYING", "TRANSITIONING", "PAUSED_PLAYBACK", "NO_MEDIA_PRESENT"]),
                string("TransportStatus", ["OK", "ERROR_OCCURRED"]),
                string("PlaybackStorageMedium", ["NONE", "NETWORK"]), string("RecordStorageMedium", ["NOT_IMPLEMENTED"]),
                string("PossiblePlaybackStorageMedia"), string("PossibleRecordStorageMedia"),
                string("CurrentPlayMode", ["NORMAL", "REPEAT_ONE", "REPEAT_ALL", "SHUFFLE"]),
                string("TransportPlaySpeed", ["1"]), string("RecordMediumWriteStatus", ["NOT_IMPLEMENTED"]),
                string("CurrentRecordQualityMode", ["NOT_IMPLEMENTED"]), string("PossibleRecordQualityModes"),
                StateVariable(name: "NumberOfTracks", type: "ui4", range: (0, 2, 1)),
                StateVariable(name: "CurrentTrack", type: "ui4", range: (0, 2, 1)),
                string("CurrentTrackDuration"), string("CurrentMediaDuration"), string("CurrentTrackMetaData"),
                string("CurrentTrackURI"), string("AVTransportURI"), string("AVTransportURIMetaData"),
                string("NextAVTransportURI"), string("NextAVTransportURIMetaData"), string("RelativeTimePosition"),
                string("AbsoluteTimePosition"), StateVariable(name: "RelativeCounterPosition", type: "i4"),
                StateVariable(name: "AbsoluteCounterPosition", type: "i4"), string("CurrentTransportActions"),
                string("LastChange", evented: true), string("A_ARG_TYPE_SeekMode", ["TRACK_NR", "ABS_TIME", "REL_TIME"]),
                string("A_ARG_TYPE_SeekTarget"), StateVariable(name: "A_ARG_TYPE_InstanceID", type: "ui4"),
            ]
        case .renderingControl:
            return [
                string("PresetNameList"), string("LastChange", evented: true),
                StateVariable(name: "Volume", type: "ui2", range: (0, 100, 1)), StateVariable(name: "Mute", type: "boolean"),
                string("A_ARG_TYPE_Channel", ["Master"]), StateVariable(name: "A_ARG_TYPE_InstanceID", type: "ui4"),
                string("A_ARG_TYPE_PresetName", ["FactoryDefaults"]),
            ]
        case .connectionManager:
            return [
                string("SourceProtocolInfo", evented: true), string("SinkProtocolInfo", evented: true),
                string("CurrentConnectionIDs", evented: true),
                string(
                    "A_ARG_TYPE_ConnectionStatus", ["OK", "ContentFormatMismatch", "InsufficientBandwidth", "UnreliableChannel", "Unknown"]),
                string("A_ARG_TYPE_ConnectionManager"), string("A_ARG_TYPE_Direction", ["Input", "Output"]),
                string("A_ARG_TYPE_ProtocolInfo"), StateVariable(name: "A_ARG_TYPE_ConnectionID", type: "i4"),
                StateVariable(name: "A_ARG_TYPE_AVTransportID", type: "i4"), StateVariable(name: "A_ARG_TYPE_RcsID", type: "i4"),
            ]
        }
    }

    /// The SCPD document.
    var scpd: String {
        var xml = #"<?xml version="1.0" encoding="utf-8"?>"# + "\n"
        xml += #"<scpd xmlns="urn:schemas-upnp-org:service-1-0"><specVersion><major>1</major><minor>0</minor></specVersion>"#
        xml += "<actionList>"
        for action in actions {
            xml += "<action><name>\(action.name)</name><argumentList>"
            for (name, variable) in action.inputs {
                xml +=
                    "<argument><name>\(name)</name><direction>in</direction><relatedStateVariable>\(variable)</relatedStateVariable></argument>"
            }
            for (name, variable) in action.outputs {
                xml +=
                    "<argument><name>\(name)</name><direction>out</direction><relatedStateVariable>\(variable)</relatedStateVariable></argument>"
            }
            xml += "</argumentList></action>"
        }
        xml += "</actionList><serviceStateTable>"
        for variable in variables {
            xml += "<stateVariable sendEvents=\"\(variable.evented ? "yes" : "no")\"><name>\(variable.name)</name>"
            xml += "<dataType>\(variable.type)</dataType>"
            if !variable.allowed.isEmpty {
                xml += "<allowedValueList>" + variable.allowed.map { "<allowedValue>\($0)</allowedValue>" }.joined() + "</allowedValueList>"
            }
            if let range = variable.range {
                xml += "<allowedValueRange><minimum>\(range.minimum)</minimum><maximum>\(range.maximum)</maximum>"
                xml += "<step>\(range.step)</step></allowedValueRange>"
            }
            xml += "</stateVariable>"
        }
        xml += "</serviceStateTable></scpd>\n"
        return xml
    }
}

/// The root device's description.
enum RendererDescription {
    static let deviceType = "urn:schemas-upnp-org:device:MediaRenderer:1"
    static let path = "/upnp/description.xml"

    static func document(name: String, udn: String, version: String) -> String {
        var xml = #"<?xml version="1.0" encoding="utf-8"?>"# + "\n"
        xml += #"<root xmlns="urn:schemas-upnp-org:device-1-0" xmlns:dlna="urn:schemas-dlna-org:device-1-0">"#
        xml += "<specVersion><major>1</major><minor>0</minor></specVersion><device>"
        xml += "<deviceType>\(deviceType)</deviceType><friendlyName>\(XMLText.escape(name))</friendlyName>"
        xml += "<manufacturer>Tonearm</manufacturer><modelDescription>Tonearm audio player daemon</modelDescription>"
        xml += "<modelName>tonearmd</modelName><modelNumber>\(XMLText.escape(version))</modelNumber>"
        xml += "<UDN>\(udn)</UDN><dlna:X_DLNADOC>DMR-1.50</dlna:X_DLNADOC><serviceList>"
        for service in RendererService.allCases {
            xml += "<service><serviceType>\(service.type)</serviceType><serviceId>\(service.id)</serviceId>"
            xml += "<SCPDURL>\(service.scpdPath)</SCPDURL><controlURL>\(service.controlPath)</controlURL>"
            xml += "<eventSubURL>\(service.eventPath)</eventSubURL></service>"
        }
        xml += "</serviceList></device></root>\n"
        return xml
    }
}
