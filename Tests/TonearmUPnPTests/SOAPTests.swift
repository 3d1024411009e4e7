import Foundation
import Logging
import NIOCore
import Testing

@testable import TonearmUPnP

@Suite("SOAP, DIDL-Lite, the descriptions and SSDP's answers")
struct SOAPTests {
    static func envelope(_ action: String, _ arguments: String) -> [UInt8] {
        Array(
            (#"<?xml version="1.0"?><s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Body>"#
                + "<u:\(action) xmlns:u=\"urn:schemas-upnp-org:service:AVTransport:1\">\(arguments)</u:\(action)></s:Body></s:Envelope>")
                .utf8)
    }

    @Test func anActionIsReadWithItsArguments() throws {
        let request = try SOAPRequest.parse(
            Self.envelope("Seek", "<InstanceID>0</InstanceID><Unit>REL_TIME</Unit><Target>0:0:5</Target>"),
            soapAction: "\"urn:schemas-upnp-org:service:AVTransport:1#Seek\"", service: .avTransport)
        #expect(request.action == "Seek")
        #expect(request.arguments == ["InstanceID": "0", "Unit": "REL_TIME", "Target": "0:0:5"])
    }

    @Test func aSOAPActionHeaderNamingAnotherActionOrServiceIsRefused() {
        #expect(throws: UPnPError.self) {
            try SOAPRequest.parse(
                Self.envelope("Play", ""), soapAction: "\"urn:schemas-upnp-org:service:AVTransport:1#Stop\"", service: .avTransport)
        }
        #expect(throws: UPnPError.self) {
            try SOAPRequest.parse(
                Self.envelope("Play", ""), soapAction: "\"urn:schemas-upnp-org:service:AVTransport:1#Play\"", service: .renderingControl)
        }
    }

    @Test func anEntityBombIsInvalidArgs() {
        let bomb = Array(#"<!DOCTYPE a [<!ENTITY a "aaaaaaaaaa">]><s:Envelope><s:Body><Play>&a;</Play></s:Body></s:Envelope>"#.utf8)
        #expect(throws: UPnPError.invalidArgs("a document type declaration (DTD) is not accepted")) {
            try SOAPRequest.parse(bomb, soapAction: nil, service: .avTransport)
        }
    }

    @Test func aFaultCarriesTheCodeAndAResponseItsOutputs() throws {
        let fault = try XMLReader.parse(SOAPReply.fault(.seekModeNotSupported))
        #expect(fault.first("errorCode")?.text == "710")
        let response = try XMLReader.parse(
            SOAPReply.response(service: .renderingControl, action: "GetVolume", outputs: [("CurrentVolume", "40")]))
        #expect(response.first("GetVolumeResponse")?.child("CurrentVolume")?.text == "40")
    }

    @Test func didlLiteBecomesTags() throws {
        let didl = """
            <DIDL-Lite xmlns="urn:schemas-upnp-org:metadata-1-0/DIDL-Lite/" xmlns:dc="http://purl.org/dc/elements/1.1/" \
            xmlns:upnp="urn:schemas-upnp-org:metadata-1-0/upnp/"><item id="1" parentID="0" restricted="1">\
            <dc:title>Blue &amp; Green</dc:title><dc:creator>Someone</dc:creator><upnp:album>An Album</upnp:album>\
            <upnp:albumArtURI>http://x/art.jpg</upnp:albumArtURI><upnp:class>object.item.audioItem.musicTrack</upnp:class>\
            <res protocolInfo="http-get:*:audio/flac:*" duration="0:03:00.000">http://x/a.flac</res></item></DIDL-Lite>
            """
        let metadata = try DIDLMetadata.read(didl)
        #expect(metadata.tags?.title == "Blue & Green")
        #expect(metadata.tags?.artist == "Someone")
        #expect(metadata.tags?.album == "An Album")
        #expect(metadata.tags?.duration == 180)
        #expect(metadata.albumArtURI == "http://x/art.jpg")
        #expect(metadata.mimeType == "audio/flac")
        #expect(try DIDLMetadata.read("") == .none)
        #expect(try DIDLMetadata.read("NOT_IMPLEMENTED") == .none)
        #expect(throws: UPnPError.self) { try DIDLMetadata.read("<DIDL-Lite><item>") }
        #expect(throws: UPnPError.self) { try DIDLMetadata.read("<html/>") }
    }

    @Test func everyArgumentNamesAStateVariableOfItsService() throws {
        for service in RendererService.allCases {
            let names = Set(service.variables.map(\.name))
            for action in service.actions {
                for (argument, variable) in action.inputs + action.outputs {
                    #expect(names.contains(variable), "\(service).\(action.name).\(argument) -> \(variable)")
                }
            }
            let scpd = try XMLReader.parse(service.scpd)
            #expect(scpd.name == "scpd")
            #expect(scpd.child("actionList")?.children.count == service.actions.count)
        }
        let description = try XMLReader.parse(RendererDescription.document(name: "A <room>", udn: "uuid:1", version: "0.1"))
        #expect(description.first("friendlyName")?.text == "A <room>")
        #expect(description.first("serviceList")?.children.count == 3)
    }

    @Test func eventsCarryLastChangeEscapedOnce() throws {
        let body = try XMLReader.parse(EventHub.body(.renderingControl, [("Volume", "40"), ("Mute", "0")]))
        let lastChange = try #require(body.first("LastChange")?.text)
        let event = try XMLReader.parse(lastChange)
        let volume = try #require(event.first("Volume"))
        #expect(volume.attributes == ["channel": "Master", "val": "40"])
    }

    @Test func aCallbackMustBeHTTPAtTheSubscribersOwnAddress() {
        #expect(
            RendererHTTPHandler.callback("<http://10.0.0.5:8080/notify>", peer: "10.0.0.5")
                == EventHub.Callback(host: "10.0.0.5", port: 8080, path: "/notify"))
        #expect(RendererHTTPHandler.callback("<http://10.0.0.6:8080/notify>", peer: "10.0.0.5") == nil)
        #expect(RendererHTTPHandler.callback("<https://10.0.0.5/notify>", peer: "10.0.0.5") == nil)
        #expect(RendererHTTPHandler.callback("http://10.0.0.5/notify", peer: "10.0.0.5") == nil)
        #expect(RendererHTTPHandler.timeout("Second-540") == 540)
        #expect(RendererHTTPHandler.timeout("infinite") == EventHub.maximumTimeout)
    }

    @Test func aCallbackPathIsSentAsGivenAndNeverWithSpaceOrControls() {
        #expect(RendererHTTPHandler.callback("<http://10.0.0.5/ev%20t/?a=1>", peer: "10.0.0.5")?.path == "/ev%20t/?a=1")
        #expect(RendererHTTPHandler.callback("<http://10.0.0.5/>", peer: "10.0.0.5")?.path == "/")
    }

    @Test func whatACastMayNotReachFromAnotherMachine() {
        for host in ["127.0.0.1", "localhost", "[::1]", "169.254.169.254", "0.0.0.0", "LOCALHOST.", "a.localhost"] {
            #expect(Renderer.isLocalOnly(host), "\(host)")
        }
        for host in ["192.168.1.5", "10.0.0.1", "music.example.net"] {
            #expect(!Renderer.isLocalOnly(host), "\(host)")
        }
    }

    @Test func aSearchIsAnsweredForItsTargetsAndABadMXIsIgnored() throws {
        let responder = SSDPResponder(
            udn: "uuid:1", bootID: 3,
            addresses: [ServedAddress(interface: "lo", address: "127.0.0.1", netmask: "255.0.0.0", port: 8080)], port: 1900,
            logger: .init(label: "test"))
        let sender = try SocketAddress(ipAddress: "127.0.0.1", port: 5000)
        func search(_ st: String, mx: String = "1") -> String {
            "M-SEARCH * HTTP/1.1\r\nHOST: 239.255.255.250:1900\r\nMAN: \"ssdp:discover\"\r\nMX: \(mx)\r\nST: \(st)\r\n\r\n"
        }
        #expect(responder.answers(to: search("ssdp:all"), from: sender)?.replies.count == 6)
        let one = try #require(responder.answers(to: search(RendererDescription.deviceType), from: sender))
        let text = String(buffer: one.replies[0])
        #expect(text.contains("LOCATION: http://127.0.0.1:8080/upnp/description.xml"))
        #expect(text.contains("USN: uuid:1::urn:schemas-upnp-org:device:MediaRenderer:1"))
        #expect(text.contains("BOOTID.UPNP.ORG: 3"))
        #expect(responder.answers(to: search("urn:schemas-upnp-org:device:MediaServer:1"), from: sender) == nil)
        for bad in ["nan", "inf", "-inf", "x"] { #expect(responder.answers(to: search("ssdp:all", mx: bad), from: sender) == nil) }
        // A searcher on no network served here is not answered.
        #expect(responder.answers(to: search("ssdp:all"), from: try SocketAddress(ipAddress: "203.0.113.9", port: 5000)) == nil)
    }
}
