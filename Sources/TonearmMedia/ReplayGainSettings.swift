import Foundation

/// Which of a file's ReplayGain values set its gain (`replay_gain.mode`).
public enum ReplayGainMode: String, Sendable, Equatable, CaseIterable {
    /// No ReplayGain: the samples keep their level (bit-perfect at volume 100).
    case off
    case track
    case album
    /// Album gain for an item that shares its album with a neighbour in the queue, else track gain.
    case auto
}

/// How the output turns an item's ReplayGain tags into gain.
public struct ReplayGainSettings: Sendable, Equatable {
    public var mode: ReplayGainMode
    /// Added to the tag's gain, in dB; files without the tag keep their level.
    public var preampDB: Double

    public init(mode: ReplayGainMode = .off, preampDB: Double = 0) {
        self.mode = mode
        self.preampDB = preampDB
    }

    /// The gain in dB for an item with these tags: the chosen gain plus preamp, lowered so that
    /// the peak never clips. 0 when off or when the file has no such tag.
    public func gainDB(_ tags: ReplayGainInfo?, prefersAlbum: Bool) -> Double {
        guard mode != .off, let tags else { return 0 }
        let album = mode == .album || (mode == .auto && prefersAlbum)
        let gain = album ? tags.albumGain ?? tags.trackGain : tags.trackGain
        let peak = album ? tags.albumPeak ?? tags.trackPeak : tags.trackPeak
        guard let gain else { return 0 }
        var decibels = gain + preampDB
        if let peak, peak > 0 { decibels = min(decibels, -20 * log10(peak)) }
        return decibels
    }
}
