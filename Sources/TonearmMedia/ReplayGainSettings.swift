import Foundation

/// Which values set an item's gain (`replay_gain.mode`).
package enum ReplayGainMode: String, Sendable, Equatable, CaseIterable {
    /// No gain: the samples keep their level (bit-perfect at volume 100).
    case off
    /// The ReplayGain tags' track gain; an untagged file keeps its level.
    case track
    /// The tags' album gain (track gain where there is none).
    case album
    /// The tags: album gain for an item that shares its album with a neighbour in the queue,
    /// else track gain; an untagged file is leveled by its measured loudness.
    case auto
    /// Always the measured loudness (EBU R128), tags or not.
    case loudness

    /// Whether the mode levels by measured loudness (`auto`, `loudness`): only then are queue
    /// items measured ahead.
    package var usesLoudness: Bool { self == .auto || self == .loudness }
}

/// How a live stream's level is kept (`replay_gain.live`).
package enum LiveGainMode: String, Sendable, Equatable, CaseIterable {
    /// Streams keep their level (plus the preamp under a mode that is not off).
    case off
    /// A slow automatic gain from the stream's short-term loudness (`LiveGain`).
    case agc
}

/// Where an item's gain comes from, as status shows it.
package enum GainSource: String, Sendable, Equatable, CaseIterable {
    /// The file's ReplayGain tags.
    case tags
    /// Its loudness, measured by Tonearm.
    case measured
    /// Its loudness was not known when it started: the loudness of its opening (its first
    /// seconds), measured as it started, for the whole item; it may lower the item, never raise it.
    case provisional
    /// Its loudness was not known when it started: the preamp alone, for the whole item.
    case pending
    /// A live stream's automatic gain.
    case live
    /// No gain: ReplayGain is off, or the mode uses tags the file does not have.
    case none
}

/// The gain an item plays with, and why.
package struct AppliedGain: Sendable, Equatable {
    package var decibels: Double
    package var source: GainSource

    package init(decibels: Double, source: GainSource) {
        self.decibels = decibels
        self.source = source
    }
}

/// How the output turns an item's ReplayGain tags, or its measured loudness, into gain.
package struct ReplayGainSettings: Sendable, Equatable {
    package var mode: ReplayGainMode
    /// Added to the tag's or the measurement's gain, in dB.
    package var preampDB: Double
    /// The level measured loudness is brought to (`replay_gain.target_lufs`).
    package var targetLUFS: Double
    /// A live stream's automatic gain.
    package var live: LiveGainMode

    package init(
        mode: ReplayGainMode = .off, preampDB: Double = 0, targetLUFS: Double = Loudness.referenceLUFS,
        live: LiveGainMode = .off
    ) {
        self.mode = mode
        self.preampDB = preampDB
        self.targetLUFS = targetLUFS
        self.live = live
    }

    /// The gain for an item with these tags and this measurement (`.pending`: not known yet).
    /// Tags rule in `track`, `album` and `auto`; `auto` falls back to the measurement for a file
    /// without them, and `loudness` always takes it. A measured gain is the distance to the
    /// target plus preamp, lowered so that the true peak stays at full scale; an item not yet
    /// measured (or silent) gets the preamp alone. `provisional`: `loudness` is only the item's
    /// opening's, which lowers a loud item but never raises a quiet one above the preamp (louder
    /// passages may follow a quiet opening, and they would clip).
    package func gain(
        tags: ReplayGainInfo?, loudness: LoudnessMeasurement?, prefersAlbum: Bool,
        provisional: Bool = false
    ) -> AppliedGain {
        if mode == .off { return AppliedGain(decibels: 0, source: .none) }
        if mode != .loudness, let tags {
            let album = mode == .album || (mode == .auto && prefersAlbum)
            let gain = album ? tags.albumGain ?? tags.trackGain : tags.trackGain
            let peak = album ? tags.albumPeak ?? tags.trackPeak : tags.trackPeak
            if let gain {
                var decibels = gain + preampDB
                if let peak, peak > 0 { decibels = min(decibels, -20 * log10(peak)) }
                return AppliedGain(decibels: decibels, source: .tags)
            }
        }
        guard mode == .auto || mode == .loudness else { return AppliedGain(decibels: 0, source: .none) }
        switch loudness {
        case .measured(let measured):
            let decibels = measured.gain(towards: targetLUFS, preamp: preampDB)
            if provisional { return AppliedGain(decibels: min(decibels, preampDB), source: .provisional) }
            return AppliedGain(decibels: decibels, source: .measured)
        case .silent, .unmeasurable:
            return AppliedGain(decibels: preampDB, source: .measured)
        case nil:
            return AppliedGain(decibels: preampDB, source: .pending)
        }
    }
}
