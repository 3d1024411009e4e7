import Foundation
import TonearmCore
import TonearmMedia

/// What a client may name as a source, checked by both front-ends before anything is opened:
/// a protocol `input.protocols` allows and, for a local file, a path inside `input.roots`.
/// (The engine checks the protocol again at every open, redirects included.)
package struct SourcePolicy: Sendable, Equatable {
    package var roots: MediaRoots
    package var input: InputConfiguration

    package init(roots: MediaRoots = MediaRoots([]), input: InputConfiguration = InputConfiguration()) {
        self.roots = roots
        self.input = input
    }

    /// Why `url` may not be played, or nil when it may.
    package func refusal(_ url: URL) -> String? {
        guard input.allows(url) else { return Self.protocolRefusal(InputConfiguration.scheme(of: url), input) }
        guard roots.contains(url) else { return "\(url.path) is outside input.roots (\(roots.paths.joined(separator: ", ")))" }
        return nil
    }

    /// The rule both front-ends apply to what `add` queues, whatever named it (a path, a
    /// directory, a playlist, a search, songs the library's database holds): each file as
    /// `refusal` takes it, where it really is once links are resolved. The database names a song
    /// by its place in the music directory, and `library.follow_symlinks` scans through a link
    /// that may lead out of every root: such a song is refused here, at `add`, not when the
    /// engine reaches it. The first file refused and why; nil: all may be queued.
    package func refusal(adding urls: some Sequence<URL>) -> (url: URL, reason: String)? {
        for url in urls {
            if let reason = refusal(url) { return (url, reason) }
        }
        return nil
    }

    package static func protocolRefusal(_ scheme: String, _ input: InputConfiguration) -> String {
        "the protocol '\(scheme)' is not allowed (input.protocols: \(input.protocols.joined(separator: ", ")))"
    }

    /// The scheme of a client's URI by MPD's rule: only a scheme followed by `://` makes a URI,
    /// so "Bach: Suite.flac" and "Live: 2020" are paths; nil for a path.
    package static func uriScheme(of text: String) -> String? {
        guard let scheme = scheme(of: text), text.utf8.dropFirst(scheme.utf8.count).starts(with: "://".utf8) else { return nil }
        return scheme
    }

    /// The scheme of a URL-like text (RFC 3986: a letter, then letters, digits, + - .), lower-cased,
    /// also where `URL` cannot parse the rest ("concat:/a|/b"); nil for a plain path.
    package static func scheme(of text: String) -> String? {
        // Byte by byte, stopping at the first byte no scheme has: a library path is asked
        // for each song a client adds, and most stop at their first space or slash.
        var length = 0
        for byte in text.utf8 {
            if byte == UInt8(ascii: ":") { break }
            let letter = (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte | 0x20)
            let digit = (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
            let sign = byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
            guard letter || (length > 0 && (digit || sign)) else { return nil }
            length += 1
        }
        guard length >= 2, length < text.utf8.count else { return nil }  // no colon: a plain path
        return String(decoding: text.utf8.prefix(length), as: UTF8.self).lowercased()
    }
}
