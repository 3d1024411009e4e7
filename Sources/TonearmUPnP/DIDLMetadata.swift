import TonearmMedia

/// The DIDL-Lite a control point sends with a URI (CurrentURIMetaData), read for what every
/// front-end shows of the item: title, artist, album and the rest. Empty metadata and
/// `NOT_IMPLEMENTED` are no metadata; metadata that is not well-formed DIDL-Lite is refused
/// (402), as a control point sending it has a bug worth hearing of.
struct DIDLMetadata: Sendable, Equatable {
    var tags: MediaTags?
    var albumArtURI: String?
    /// The MIME type of the `res` element's protocolInfo (`http-get:*:audio/flac:*`).
    var mimeType: String?

    static let none = DIDLMetadata(tags: nil, albumArtURI: nil, mimeType: nil)

    static func read(_ text: String) throws(UPnPError) -> DIDLMetadata {
        let trimmed = text.trimmingSpace
        if trimmed.isEmpty || trimmed == "NOT_IMPLEMENTED" { return .none }
        let root: XMLElement
        do { root = try XMLReader.parse(trimmed) } catch { throw .invalidArgs("metadata: \(error.description)") }
        guard root.name == "DIDL-Lite" else { throw .invalidArgs("metadata is not DIDL-Lite") }
        guard let item = root.children.first(where: { $0.name == "item" || $0.name == "container" }) else { return .none }
        var entries: [MediaTags.Entry] = []
        func add(_ tag: MediaTag, _ element: String) {
            for child in item.children where child.name == element {
                let value = child.text.trimmingSpace
                if !value.isEmpty, !entries.contains(where: { $0.tag == tag && $0.value == value }) {
                    entries.append(MediaTags.Entry(tag, value))
                }
            }
        }
        add(.title, "title")
        add(.artist, "artist")
        if !entries.contains(where: { $0.tag == .artist }) { add(.artist, "creator") }
        add(.album, "album")
        add(.genre, "genre")
        add(.date, "date")
        add(.track, "originalTrackNumber")
        add(.composer, "author")
        let resource = item.child("res")
        let mimeType = resource?.attributes["protocolInfo"].flatMap { info -> String? in
            let fields = info.split(separator: ":", omittingEmptySubsequences: false)
            return fields.count == 4 ? String(fields[2]) : nil
        }
        let duration = resource?.attributes["duration"].flatMap(Self.seconds)
        let art = item.child("albumArtURI")?.text.trimmingSpace
        return DIDLMetadata(
            tags: entries.isEmpty && duration == nil ? nil : MediaTags(entries: entries, duration: duration),
            albumArtURI: art?.isEmpty == false ? art : nil, mimeType: mimeType)
    }

    /// `H+:MM:SS[.F+]` in seconds.
    static func seconds(_ text: String) -> Double? {
        let parts = text.split(separator: ":")
        guard parts.count == 3, let hours = Double(parts[0]), let minutes = Double(parts[1]), let seconds = Double(parts[2]),
            hours >= 0, minutes >= 0, seconds >= 0
        else { return nil }
        let total = hours * 3600 + minutes * 60 + seconds
        // Longer than any item (three years) is not a time but damage.
        return total.isFinite && total <= 1e8 ? total : nil
    }
}

extension String {
    var trimmingSpace: String {
        var scalars = Substring(self)
        while let first = scalars.first, first.isWhitespace { scalars.removeFirst() }
        while let last = scalars.last, last.isWhitespace { scalars.removeLast() }
        return String(scalars)
    }
}
