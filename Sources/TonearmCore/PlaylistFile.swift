import Foundation

package struct PlaylistEntry: Sendable, Equatable {
    package var url: URL
    package var title: String?

    package init(url: URL, title: String? = nil) {
        self.url = url
        self.title = title
    }
}

package struct PlaylistError: Error, Sendable, Equatable {
    package var message: String

    package init(message: String) { self.message = message }
}

/// Parses M3U/M3U8 and PLS playlist text. The caller reads the file; this does no I/O (relative
/// entries are resolved as text, never by asking the file system), so it can be tested on strings.
package enum PlaylistFile {
    package enum Kind: Sendable { case m3u, pls }

    /// The kind for a path's extension (case-insensitive: .m3u, .m3u8 -> m3u; .pls -> pls), else nil.
    package static func kind(forPath path: String) -> Kind? {
        guard let dot = path.lastIndex(of: "."),
            !path[dot...].contains("/")
        else { return nil }
        switch path[path.index(after: dot)...].lowercased() {
        case "m3u", "m3u8": return .m3u
        case "pls": return .pls
        default: return nil
        }
    }

    /// Entries in order. Relative entries resolve against `directory` (a file URL of the playlist's
    /// folder); absolute paths and `scheme://` URLs are kept (the caller decides which are allowed).
    /// M3U: `#EXTINF:<secs>,<title>` titles the next entry; other `#` lines and blank lines are
    /// skipped. PLS: `[playlist]`, `FileN=`, `TitleN=`, ordered by N, keys case-insensitive.
    /// CRLF, CR and a UTF-8 BOM are accepted in both.
    package static func parse(_ text: String, kind: Kind, directory: URL) throws(PlaylistError) -> [PlaylistEntry] {
        let lines = splitLines(text)
        switch kind {
        case .m3u: return try parseM3U(lines, directory: directory)
        case .pls: return try parsePLS(lines, directory: directory)
        }
    }

    // MARK: M3U

    private static func parseM3U(_ lines: [Substring], directory: URL) throws(PlaylistError) -> [PlaylistEntry] {
        var entries: [PlaylistEntry] = []
        var pendingTitle: String?
        for (index, raw) in lines.enumerated() {
            let line = trimmed(raw)
            if line.isEmpty { continue }
            if line.hasPrefix("#") {
                if hasPrefixIgnoringCase(line, "#EXTINF:") {
                    pendingTitle = extinfTitle(line.dropFirst("#EXTINF:".count))
                }
                continue
            }
            guard let url = resolve(line, directory: directory) else {
                throw PlaylistError(message: "line \(index + 1): not a valid URL: \(line)")
            }
            entries.append(PlaylistEntry(url: url, title: pendingTitle))
            pendingTitle = nil
        }
        return entries
    }

    /// The title after `<secs>[ attributes],`: everything after the first comma that is not inside
    /// double quotes, so a title may contain commas, and IPTV-style `tvg-name="a,b"` attributes
    /// do not cut it short. No comma: no title.
    private static func extinfTitle(_ rest: Substring) -> String? {
        var inQuotes = false
        for index in rest.indices {
            switch rest[index] {
            case "\"": inQuotes.toggle()
            case "," where !inQuotes:
                let title = trimmed(rest[rest.index(after: index)...])
                return title.isEmpty ? nil : String(title)
            default: break
            }
        }
        return nil
    }

    // MARK: PLS

    private static func parsePLS(_ lines: [Substring], directory: URL) throws(PlaylistError) -> [PlaylistEntry] {
        var files: [Int: (url: URL, line: Int)] = [:]
        var titles: [Int: String] = [:]
        // nil until a section header; only keys inside [playlist] count.
        var inPlaylist: Bool?

        for (index, raw) in lines.enumerated() {
            let number = index + 1
            let line = trimmed(raw)
            // INI comments: both ';' and '#' are seen in the wild.
            if line.isEmpty || line.hasPrefix(";") || line.hasPrefix("#") { continue }
            if line.hasPrefix("[") {
                guard line.hasSuffix("]") else { throw PlaylistError(message: "line \(number): malformed section header: \(line)") }
                inPlaylist = line.dropFirst().dropLast().lowercased() == "playlist"
                continue
            }
            guard let inside = inPlaylist else {
                throw PlaylistError(message: "line \(number): expected [playlist] before any entry")
            }
            guard let equals = line.firstIndex(of: "=") else {
                throw PlaylistError(message: "line \(number): expected key=value: \(line)")
            }
            guard inside else { continue }
            let key = trimmed(line[..<equals]).lowercased()
            let value = trimmed(line[line.index(after: equals)...])

            if let n = entryNumber(key, prefix: "file") {
                // An empty FileN names nothing; skip it rather than fail the whole playlist.
                guard !value.isEmpty else { continue }
                guard let url = resolve(value, directory: directory) else {
                    throw PlaylistError(message: "line \(number): not a valid URL: \(value)")
                }
                files[n] = (url, number)
            } else if let n = entryNumber(key, prefix: "title") {
                titles[n] = value.isEmpty ? nil : String(value)
            }
            // Other keys (NumberOfEntries, Version, LengthN, ...) carry nothing we need.
        }
        guard inPlaylist != nil else { throw PlaylistError(message: "missing [playlist] header") }
        return files.keys.sorted().compactMap { n in
            files[n].map { PlaylistEntry(url: $0.url, title: titles[n]) }
        }
    }

    /// N from "fileN"/"titleN" (already lowercased); nil for anything else, e.g. "filex".
    private static func entryNumber(_ key: String, prefix: String) -> Int? {
        guard key.hasPrefix(prefix) else { return nil }
        let digits = key.dropFirst(prefix.count)
        guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return Int(digits)
    }

    // MARK: Shared

    /// `scheme://...` -> that URL (file:// percent escapes decode as URLs do); `/abs` -> a file URL
    /// as given; anything else -> relative to `directory`, standardized so `..` is resolved.
    /// Only the `scheme://` form counts as a URL: "Track 1: Intro.flac" is a file name, not a
    /// URL with the scheme "track 1". nil only for a `scheme://` that is not a valid URL.
    private static func resolve(_ entry: Substring, directory: URL) -> URL? {
        let text = String(entry)
        if hasURLScheme(entry) { return URL(string: text) }
        if text.hasPrefix("/") { return URL(fileURLWithPath: text, isDirectory: false) }
        // isDirectory: false, or Foundation would stat the path to find out.
        return directory.appendingPathComponent(text, isDirectory: false).standardized
    }

    /// RFC 3986 scheme (a letter, then letters, digits, + - .) followed by "://". Two letters at
    /// least, so a Windows drive ("C://") is not taken for one.
    private static func hasURLScheme(_ s: Substring) -> Bool {
        guard let colon = s.firstIndex(of: ":"), s[colon...].hasPrefix("://") else { return false }
        let scheme = s[..<colon]
        guard scheme.count >= 2, let head = scheme.first, head.isASCII, head.isLetter else { return false }
        return scheme.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) }
    }

    /// Lines split on LF, CRLF or CR, after dropping a UTF-8 BOM. Empty lines are kept so that
    /// line numbers in errors match the file.
    private static func splitLines(_ text: String) -> [Substring] {
        var text = Substring(text)
        // The BOM is its own grapheme, but compare scalars so no neighbour can merge with it.
        if text.unicodeScalars.first == "\u{FEFF}" {
            text = Substring(text.unicodeScalars.dropFirst())
        }
        // Swift's Character treats "\r\n" as one newline character, so this splits CRLF once.
        return text.split(omittingEmptySubsequences: false) { $0 == "\n" || $0 == "\r" || $0 == "\r\n" }
    }

    private static func trimmed(_ s: Substring) -> Substring {
        guard let start = s.firstIndex(where: { !$0.isWhitespace }),
            let end = s.lastIndex(where: { !$0.isWhitespace })
        else { return "" }
        return s[start...end]
    }

    private static func hasPrefixIgnoringCase(_ s: Substring, _ prefix: String) -> Bool {
        s.prefix(prefix.count).lowercased() == prefix.lowercased()
    }
}
