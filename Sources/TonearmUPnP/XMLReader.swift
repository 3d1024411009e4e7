/// An element of a small XML document: a SOAP request, or the DIDL-Lite a control point sends.
/// Names are local (a prefix is dropped: SOAP and DIDL-Lite names do not clash within a
/// document, and control points use every prefix there is for the same namespace).
struct XMLElement: Sendable, Equatable {
    var name: String
    var attributes: [String: String] = [:]
    var children: [XMLElement] = []
    /// The text directly inside, entities and CDATA resolved.
    var text = ""

    func child(_ name: String) -> XMLElement? { children.first { $0.name == name } }

    /// The first element named `name` at any depth, this one included.
    func first(_ name: String) -> XMLElement? {
        if self.name == name { return self }
        for child in children {
            if let found = child.first(name) { return found }
        }
        return nil
    }
}

/// Why a document was refused.
struct XMLRefusal: Error, Sendable, Equatable, CustomStringConvertible {
    let description: String
}

/// Reads the XML a network peer sends. Hand-written on purpose: the only parser in reach,
/// FoundationXML, is libxml2 with DTD processing behind it, and a renderer needs none of
/// that. This reader has no DTD support at all: a `<!DOCTYPE`, an entity declaration or a
/// reference to any entity but the five predefined ones and character references is refused
/// outright, so there is no entity expansion ("billion laughs") and no external entity to
/// fetch. Documents are bounded by the caller (64 KiB); depth and element count are bounded here.
enum XMLReader {
    static let maximumDepth = 64
    static let maximumElements = 20_000

    static func parse(_ text: String) throws(XMLRefusal) -> XMLElement {
        try parse(Array(text.utf8))
    }

    static func parse(_ bytes: [UInt8]) throws(XMLRefusal) -> XMLElement {
        var reader = Cursor(bytes: bytes)
        return try reader.document()
    }

    private struct Cursor {
        let bytes: [UInt8]
        var at = 0
        var elements = 0

        init(bytes: [UInt8]) {
            self.bytes = bytes
            // A UTF-8 byte order mark.
            if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { at = 3 }
        }

        func fail(_ why: String) -> XMLRefusal { XMLRefusal(description: "not well-formed XML at byte \(at): \(why)") }

        func peek(_ literal: String) -> Bool {
            let utf8 = Array(literal.utf8)
            return at + utf8.count <= bytes.count && bytes[at..<at + utf8.count].elementsEqual(utf8)
        }

        mutating func skipSpace() {
            while at < bytes.count, bytes[at] == 0x20 || bytes[at] == 0x09 || bytes[at] == 0x0A || bytes[at] == 0x0D { at += 1 }
        }

        /// Skips past `end`, or fails.
        mutating func skip(past end: String, what: String) throws(XMLRefusal) {
            let utf8 = Array(end.utf8)
            while at + utf8.count <= bytes.count {
                if bytes[at..<at + utf8.count].elementsEqual(utf8) {
                    at += utf8.count
                    return
                }
                at += 1
            }
            throw fail("unterminated \(what)")
        }

        /// Declarations, processing instructions, comments and space outside the root.
        mutating func skipProlog() throws(XMLRefusal) {
            while true {
                skipSpace()
                if peek("<?") {
                    try skip(past: "?>", what: "processing instruction")
                } else if peek("<!--") {
                    try skip(past: "-->", what: "comment")
                } else if peek("<!") {
                    throw XMLRefusal(description: "a document type declaration (DTD) is not accepted")
                } else {
                    return
                }
            }
        }

        mutating func document() throws(XMLRefusal) -> XMLElement {
            try skipProlog()
            guard peek("<") else { throw fail("no root element") }
            let root = try element(depth: 0)
            try skipProlog()
            guard at == bytes.count else { throw fail("content after the root element") }
            return root
        }

        mutating func name() throws(XMLRefusal) -> String {
            let start = at
            while at < bytes.count {
                let byte = bytes[at]
                if byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D || byte == UInt8(ascii: ">")
                    || byte == UInt8(ascii: "/") || byte == UInt8(ascii: "=")
                {
                    break
                }
                at += 1
            }
            guard at > start, let text = String(validating: bytes[start..<at], as: UTF8.self) else { throw fail("a name is missing") }
            return text
        }

        static func local(_ name: String) -> String {
            guard let colon = name.lastIndex(of: ":") else { return name }
            return String(name[name.index(after: colon)...])
        }

        mutating func element(depth: Int) throws(XMLRefusal) -> XMLElement {
            guard depth < XMLReader.maximumDepth else { throw fail("nested deeper than \(XMLReader.maximumDepth)") }
            elements += 1
            guard elements <= XMLReader.maximumElements else { throw fail("more than \(XMLReader.maximumElements) elements") }
            at += 1  // "<"
            let qualified = try name()
            var node = XMLElement(name: Self.local(qualified))
            // Attributes.
            while true {
                skipSpace()
                guard at < bytes.count else { throw fail("unterminated tag <\(qualified)>") }
                if peek("/>") {
                    at += 2
                    return node
                }
                if bytes[at] == UInt8(ascii: ">") {
                    at += 1
                    break
                }
                let attribute = try name()
                skipSpace()
                guard at < bytes.count, bytes[at] == UInt8(ascii: "=") else { throw fail("attribute \(attribute) has no value") }
                at += 1
                skipSpace()
                guard at < bytes.count, bytes[at] == UInt8(ascii: "\"") || bytes[at] == UInt8(ascii: "'") else {
                    throw fail("attribute \(attribute)'s value is not quoted")
                }
                let quote = bytes[at]
                at += 1
                let start = at
                while at < bytes.count, bytes[at] != quote {
                    if bytes[at] == UInt8(ascii: "<") { throw fail("'<' in an attribute value") }
                    at += 1
                }
                guard at < bytes.count else { throw fail("unterminated attribute value") }
                node.attributes[Self.local(attribute)] = try Self.resolve(bytes[start..<at], cursor: self)
                at += 1
            }
            // Content.
            var text: [UInt8] = []
            while true {
                guard at < bytes.count else { throw fail("<\(qualified)> is not closed") }
                if bytes[at] != UInt8(ascii: "<") {
                    let start = at
                    while at < bytes.count, bytes[at] != UInt8(ascii: "<") { at += 1 }
                    text += try Self.resolveBytes(bytes[start..<at], cursor: self)
                } else if peek("</") {
                    at += 2
                    let closing = try name()
                    guard closing == qualified else { throw fail("</\(closing)> closes <\(qualified)>") }
                    skipSpace()
                    guard at < bytes.count, bytes[at] == UInt8(ascii: ">") else { throw fail("unterminated </\(closing)>") }
                    at += 1
                    guard let decoded = String(validating: text, as: UTF8.self) else { throw fail("text that is not UTF-8") }
                    node.text = decoded
                    return node
                } else if peek("<![CDATA[") {
                    at += 9
                    let start = at
                    try skip(past: "]]>", what: "CDATA section")
                    text += bytes[start..<at - 3]
                } else if peek("<!--") {
                    try skip(past: "-->", what: "comment")
                } else if peek("<?") {
                    try skip(past: "?>", what: "processing instruction")
                } else if peek("<!") {
                    throw XMLRefusal(description: "a document type or entity declaration is not accepted")
                } else {
                    node.children.append(try element(depth: depth + 1))
                }
            }
        }

        static func resolve(_ raw: ArraySlice<UInt8>, cursor: Cursor) throws(XMLRefusal) -> String {
            guard let text = String(validating: try resolveBytes(raw, cursor: cursor), as: UTF8.self) else {
                throw cursor.fail("text that is not UTF-8")
            }
            return text
        }

        /// Text with its references resolved: the five predefined entities and character
        /// references only.
        static func resolveBytes(_ raw: ArraySlice<UInt8>, cursor: Cursor) throws(XMLRefusal) -> [UInt8] {
            guard raw.contains(UInt8(ascii: "&")) else { return Array(raw) }
            var out: [UInt8] = []
            out.reserveCapacity(raw.count)
            var index = raw.startIndex
            while index < raw.endIndex {
                let byte = raw[index]
                guard byte == UInt8(ascii: "&") else {
                    out.append(byte)
                    index += 1
                    continue
                }
                guard let end = raw[index...].firstIndex(of: UInt8(ascii: ";")), end - index <= 12 else {
                    throw cursor.fail("'&' that starts no reference")
                }
                let name = String(decoding: raw[(index + 1)..<end], as: UTF8.self)
                switch name {
                case "lt": out.append(UInt8(ascii: "<"))
                case "gt": out.append(UInt8(ascii: ">"))
                case "amp": out.append(UInt8(ascii: "&"))
                case "quot": out.append(UInt8(ascii: "\""))
                case "apos": out.append(UInt8(ascii: "'"))
                default:
                    let scalar: Unicode.Scalar?
                    if name.hasPrefix("#x") || name.hasPrefix("#X") {
                        scalar = UInt32(name.dropFirst(2), radix: 16).flatMap(Unicode.Scalar.init)
                    } else if name.hasPrefix("#") {
                        scalar = UInt32(name.dropFirst(1)).flatMap(Unicode.Scalar.init)
                    } else {
                        throw XMLRefusal(description: "entity '&\(name);' is not accepted (no DTD, no entities)")
                    }
                    guard let scalar, scalar.value != 0 else { throw cursor.fail("character reference &\(name); is not a character") }
                    out += Array(String(Character(scalar)).utf8)
                }
                index = end + 1
            }
            return out
        }
    }
}

/// Text made safe for XML content and attribute values.
enum XMLText {
    static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for character in text.unicodeScalars {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            default:
                // Control characters other than tab and newlines cannot appear in XML 1.0.
                if character.value < 0x20, character != "\t", character != "\n", character != "\r" { continue }
                out.unicodeScalars.append(character)
            }
        }
        return out
    }
}
