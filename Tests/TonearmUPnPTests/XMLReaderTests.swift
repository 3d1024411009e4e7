import Testing

@testable import TonearmUPnP

@Suite("XMLReader: what a network peer's XML may hold")
struct XMLReaderTests {
    @Test func aSOAPEnvelopeIsReadWithPrefixesDropped() throws {
        let text = """
            <?xml version="1.0"?>
            <s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Body>
            <u:Play xmlns:u="urn:schemas-upnp-org:service:AVTransport:1"><InstanceID>0</InstanceID><Speed>1</Speed></u:Play>
            </s:Body></s:Envelope>
            """
        let root = try XMLReader.parse(text)
        #expect(root.name == "Envelope")
        let play = try #require(root.child("Body")?.children.first)
        #expect(play.name == "Play")
        #expect(play.child("Speed")?.text == "1")
    }

    @Test func predefinedEntitiesCharacterReferencesAndCDATAAreText() throws {
        let root = try XMLReader.parse("<a x='&quot;1&apos;'>&lt;b&gt; &amp; &#233;&#x263A;<![CDATA[<raw&>]]></a>")
        #expect(root.text == "<b> & é☺<raw&>")
        #expect(root.attributes["x"] == "\"1'")
    }

    @Test(arguments: [
        // Billion laughs: refused at the declaration, before anything is expanded.
        """
        <?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;">]><a>&lol2;</a>
        """,
        // An external entity.
        #"<!DOCTYPE a [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><a>&xxe;</a>"#,
        // An entity with no declaration, and one declared inside the root.
        "<a>&nbsp;</a>", "<a><!ENTITY x 'y'></a>",
        // Not well-formed.
        "<a><b></a>", "<a>", "<a></a><b/>", "text", "<a x=1/>", "<a>&#0;</a>", "<a>& b</a>",
    ])
    func refused(_ text: String) {
        #expect(throws: XMLRefusal.self) { try XMLReader.parse(text) }
    }

    @Test func depthIsBounded() {
        let deep = String(repeating: "<a>", count: 100) + String(repeating: "</a>", count: 100)
        #expect(throws: XMLRefusal.self) { try XMLReader.parse(deep) }
    }

    @Test func escapedTextReadsBack() throws {
        let text = "A & B <c> \"d\" 'e' é"
        #expect(try XMLReader.parse("<a>\(XMLText.escape(text))</a>").text == text)
    }
}
