import Foundation
import GRDB
import TonearmSync

/// SQL functions the searches need that SQLite (without ICU) lacks, registered on every
/// connection: regular expressions, case folding of URIs, audio format masks, a song's first
/// value of a tag.
enum LibraryFunctions {
    /// Compiled expressions by pattern and folding: a search runs one pattern over many rows.
    private static let compiled = Locked<[String: NSRegularExpression]>([:])

    static func register(on db: Database) {
        db.add(
            function: DatabaseFunction("tonearm_regexp", argumentCount: 3, pure: true) { values in
                guard let pattern = String.fromDatabaseValue(values[0]), let text = String.fromDatabaseValue(values[1]) else {
                    return false
                }
                let fold = Bool.fromDatabaseValue(values[2]) ?? false
                guard let expression = expression(pattern, fold: fold) else { return false }
                return expression.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
            })
        db.add(
            function: DatabaseFunction("tonearm_fold", argumentCount: 1, pure: true) { values in
                String.fromDatabaseValue(values[0]).map(LibraryFolding.fold)
            })
        db.add(
            function: DatabaseFunction("tonearm_format_mask", argumentCount: 2, pure: true) { values in
                guard let mask = String.fromDatabaseValue(values[0]), let format = String.fromDatabaseValue(values[1]) else {
                    return false
                }
                return formatMatches(mask: mask, format)
            })
        // tonearm_first_tag(song.tags, code, fallback code, …): the first value of the first of
        // these tags the song has (its tag list, StoredTagList), NULL with none. A sort by a tag
        // reads it from the song's row, where a query of the tag table per song searched it.
        db.add(
            function: DatabaseFunction("tonearm_first_tag", argumentCount: nil, pure: true) { values in
                guard values.count >= 2, let list = Data.fromDatabaseValue(values[0]) else { return nil }
                let wanted = values.dropFirst().compactMap { Int.fromDatabaseValue($0).flatMap(StoredTag.tag) }
                return list.withUnsafeBytes { bytes -> String? in
                    var firsts = [String?](repeating: nil, count: wanted.count)
                    StoredTagList.forEach(in: bytes) { tag, value in
                        if let index = wanted.firstIndex(of: tag), firsts[index] == nil {
                            firsts[index] = String(decoding: value, as: UTF8.self)
                        }
                    }
                    return firsts.lazy.compactMap { $0 }.first
                }
            })
    }

    /// A pattern that does not compile matches nothing (the parser refuses it before a search).
    static func expression(_ pattern: String, fold: Bool) -> NSRegularExpression? {
        let key = (fold ? "i:" : "c:") + pattern
        if let cached = compiled.withLock({ $0[key] }) { return cached }
        guard let made = try? NSRegularExpression(pattern: pattern, options: fold ? [.caseInsensitive] : []) else { return nil }
        compiled.withLock { cache in
            if cache.count > 256 { cache.removeAll() }
            cache[key] = made
        }
        return made
    }

    /// MPD's audio format masks: "44100:*:2" matches any bits at 44.1 kHz in stereo.
    static func formatMatches(mask: String, _ format: String) -> Bool {
        let wanted = mask.split(separator: ":", omittingEmptySubsequences: false)
        let have = format.split(separator: ":", omittingEmptySubsequences: false)
        guard wanted.count == 3, have.count == 3 else { return false }
        return zip(wanted, have).allSatisfy { $0 == "*" || $0 == $1 }
    }
}
