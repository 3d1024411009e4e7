import TOMLKit
import TonearmMedia
import TonearmPlayer

extension DaemonConfiguration {
    /// `[crossfade]`: how crossfades are made (how long, the `options` say).
    mutating func applyCrossfade(_ value: any TOMLValueConvertible, _ source: String) throws {
        guard let crossfade = value.table else { throw Invalid("\(source): [crossfade] must be a table") }
        for key in crossfade.keys {
            let value = crossfade[key]!
            switch key {
            case "skip_same_album": self.crossfade.skipSameAlbum = try bool(value, "crossfade.skip_same_album", source)
            case "manual_ms":
                self.crossfade.manualSeconds = Double(try integer(value, "crossfade.manual_ms", source, 0...5000)) / 1000
            default: throw Invalid("\(source): unknown key 'crossfade.\(key)'")
            }
        }
    }

    /// `[announce]`: how announcements play.
    mutating func applyAnnounce(_ value: any TOMLValueConvertible, _ source: String) throws {
        guard let announce = value.table else { throw Invalid("\(source): [announce] must be a table") }
        for key in announce.keys {
            let value = announce[key]!
            switch key {
            case "duck_level": announcements.duckLevel = try integer(value, "announce.duck_level", source, Bounds.volume)
            default: throw Invalid("\(source): unknown key 'announce.\(key)'")
            }
        }
    }
}
