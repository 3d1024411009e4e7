import Foundation

/// A UPnP error: a SOAP fault with `UPnPError`'s code and words.
struct UPnPError: Error, Sendable, Equatable {
    var code: Int
    var description: String

    static func invalidAction(_ name: String) -> UPnPError { UPnPError(code: 401, description: "Invalid Action: \(name)") }
    static func invalidArgs(_ why: String) -> UPnPError { UPnPError(code: 402, description: "Invalid Args: \(why)") }
    static func actionFailed(_ why: String) -> UPnPError { UPnPError(code: 501, description: "Action Failed: \(why)") }
    static func notAvailable(_ why: String) -> UPnPError { UPnPError(code: 701, description: "Transition not available: \(why)") }
    static let seekModeNotSupported = UPnPError(code: 710, description: "Seek mode not supported")
    static func illegalSeekTarget(_ target: String) -> UPnPError { UPnPError(code: 711, description: "Illegal seek target: \(target)") }
    static func illegalMIMEType(_ why: String) -> UPnPError { UPnPError(code: 714, description: "Illegal MIME-type: \(why)") }
    static func resourceNotFound(_ why: String) -> UPnPError { UPnPError(code: 716, description: "Resource not found: \(why)") }
    static let invalidInstanceID = UPnPError(code: 718, description: "Invalid InstanceID")
    static func playModeNotSupported(_ mode: String) -> UPnPError {
        UPnPError(code: 712, description: "Play mode not supported: \(mode)")
    }
}

/// An action request read from a SOAP envelope.
struct SOAPRequest: Sendable, Equatable {
    var action: String
    var arguments: [String: String]

    /// Reads the envelope; `soapAction` is the `SOAPAction` header (`"type#Action"`), which
    /// must name `service` and the body's action.
    static func parse(_ body: [UInt8], soapAction: String?, service: RendererService) throws(UPnPError) -> SOAPRequest {
        let root: XMLElement
        do { root = try XMLReader.parse(body) } catch { throw .invalidArgs(error.description) }
        guard root.name == "Envelope", let bodyElement = root.child("Body"), let call = bodyElement.children.first else {
            throw .invalidArgs("not a SOAP envelope with an action in its body")
        }
        if let soapAction {
            let header = soapAction.trimmingCharacters(in: .init(charactersIn: "\" "))
            let parts = header.split(separator: "#", maxSplits: 1).map(String.init)
            guard parts.count == 2, parts[0] == service.type, parts[1] == call.name else {
                throw .invalidAction("SOAPAction '\(soapAction)' does not name \(service.type)#\(call.name)")
            }
        }
        var arguments: [String: String] = [:]
        for argument in call.children { arguments[argument.name] = argument.text }
        return SOAPRequest(action: call.name, arguments: arguments)
    }
}

/// SOAP responses and faults, as the UPnP Device Architecture writes them.
enum SOAPReply {
    private static let envelopeStart =
        #"<?xml version="1.0" encoding="utf-8"?>"# + "\n"
        + #"<s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/" s:encodingStyle="http://schemas.xmlsoap.org/soap/encoding/"><s:Body>"#
    private static let envelopeEnd = "</s:Body></s:Envelope>\n"

    static func response(service: RendererService, action: String, outputs: [(String, String)]) -> String {
        var xml = envelopeStart + "<u:\(action)Response xmlns:u=\"\(service.type)\">"
        for (name, value) in outputs { xml += "<\(name)>\(XMLText.escape(value))</\(name)>" }
        return xml + "</u:\(action)Response>" + envelopeEnd
    }

    static func fault(_ error: UPnPError) -> String {
        envelopeStart + "<s:Fault><faultcode>s:Client</faultcode><faultstring>UPnPError</faultstring><detail>"
            + #"<UPnPError xmlns="urn:schemas-upnp-org:control-1-0">"#
            + "<errorCode>\(error.code)</errorCode><errorDescription>\(XMLText.escape(error.description))</errorDescription>"
            + "</UPnPError></detail></s:Fault>" + envelopeEnd
    }
}
