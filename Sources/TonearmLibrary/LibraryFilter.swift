import Foundation
import TonearmMedia

/// Which songs a search means: MPD's filter expressions as a value (the front-ends parse their
/// own syntax into it). Matching is done by the database (`LibrarySearch`).
package indirect enum LibraryFilter: Sendable, Equatable {
    /// What a value test reads.
    package enum Subject: Sendable, Equatable {
        case tag(MediaTag)
        /// Any tag's values.
        case anyTag
        /// The song's URI.
        case file
        /// The song's audio format ("44100:16:2"); `.equals` or `.matchesMask` only.
        case audioFormat
    }

    package enum Operation: Sendable, Equatable {
        case equals
        case notEquals
        case contains
        case startsWith
        /// A regular expression (PCRE-like, as MPD's).
        case matches
        case notMatches
        /// An audio format mask: "44100:*:2".
        case matchesMask
    }

    /// `foldCase`: compared with letters' case folded, as MPD's `search` does ("CAFÉ" finds "café").
    case value(Subject, Operation, String, foldCase: Bool)
    /// Songs in `directory` or below it ("" for all).
    case base(String)
    /// Songs whose file changed at or after this Unix time.
    case modifiedSince(Int)
    /// Songs first seen at or after this Unix time.
    case addedSince(Int)
    case not(LibraryFilter)
    case and([LibraryFilter])

    /// Every song. Made when asked, not kept in a global: an indirect enum's box is referenced
    /// through a tagged pointer, which LeakSanitizer cannot follow, so a global one is reported
    /// as leaked at exit.
    package static var everything: LibraryFilter { .and([]) }
}

/// A search: the filter, the order (by a tag, or by modification time), and the window.
package struct LibraryQuery: Sendable, Equatable {
    package enum Order: Sendable, Equatable {
        /// MPD's database order: a directory's songs, then its subdirectories', depth first.
        case database
        case tag(MediaTag, descending: Bool)
        case modified(descending: Bool)
    }

    package var filter: LibraryFilter
    package var order: Order
    package var window: Range<Int>?

    package init(filter: LibraryFilter, order: Order = .database, window: Range<Int>? = nil) {
        self.filter = filter
        self.order = order
        self.window = window
    }
}

/// Case folding for searches: Unicode-aware (ICU's full case folding, as MPD with ICU does, is
/// approximated by Foundation's case-insensitive folding), without removing accents.
package enum LibraryFolding {
    package static func fold(_ text: String) -> String {
        // Most tag values are ASCII, whose folding is lowering A to Z: done here, it costs a
        // scan a tenth of what Foundation's folding does.
        let utf8 = text.utf8
        guard utf8.allSatisfy({ $0 < 0x80 }) else { return text.folding(options: [.caseInsensitive], locale: nil) }
        guard utf8.contains(where: { $0 >= 0x41 && $0 <= 0x5A }) else { return text }
        return String(unsafeUninitializedCapacity: utf8.count) { buffer in
            for (index, byte) in utf8.enumerated() { buffer[index] = byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte }
            return utf8.count
        }
    }
}
