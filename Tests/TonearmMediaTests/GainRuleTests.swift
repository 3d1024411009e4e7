import Testing
import TonearmMedia

/// Every mode against every kind of item: which value sets the gain, and what it is.
@Suite("The gain an item plays with")
struct GainRuleTests {
    /// Tags saying −4 dB (track) and −6 dB (album), peaks low enough not to matter.
    static let tags = ReplayGainInfo(trackGain: -4, trackPeak: 0.1, albumGain: -6, albumPeak: 0.1)
    /// Measured −28 LUFS with a −12 dBTP peak: +10 dB to −18, +5 to −23.
    static let quiet = Loudness(integrated: -28, range: 4, truePeak: -12)

    enum Item: CaseIterable { case tagged, untagged }
    enum Known: CaseIterable { case measured, silent, unmeasurable, pending }

    /// mode, item, what is known → dB (with a +1 dB preamp) and source.
    static func expected(_ mode: ReplayGainMode, _ item: Item, _ known: Known) -> AppliedGain {
        let measured: AppliedGain =
            switch known {
            case .measured: AppliedGain(decibels: 11, source: .measured)
            case .silent, .unmeasurable: AppliedGain(decibels: 1, source: .measured)
            case .pending: AppliedGain(decibels: 1, source: .pending)
            }
        switch (mode, item) {
        case (.off, _): return AppliedGain(decibels: 0, source: .none)
        case (.track, .tagged), (.auto, .tagged): return AppliedGain(decibels: -3, source: .tags)
        case (.album, .tagged): return AppliedGain(decibels: -5, source: .tags)
        case (.track, .untagged), (.album, .untagged): return AppliedGain(decibels: 0, source: .none)
        case (.auto, .untagged), (.loudness, _): return measured
        }
    }

    @Test(arguments: ReplayGainMode.allCases)
    func everyModeTakesItsValue(_ mode: ReplayGainMode) {
        let settings = ReplayGainSettings(mode: mode, preampDB: 1)
        for item in Item.allCases {
            for known in Known.allCases {
                let measurement: LoudnessMeasurement? =
                    switch known {
                    case .measured: .measured(Self.quiet)
                    case .silent: .silent
                    case .unmeasurable: .unmeasurable
                    case .pending: nil
                    }
                let gain = settings.gain(tags: item == .tagged ? Self.tags : nil, loudness: measurement, prefersAlbum: false)
                let want = Self.expected(mode, item, known)
                #expect(gain.source == want.source, "\(mode) \(item) \(known)")
                #expect(abs(gain.decibels - want.decibels) < 1e-9, "\(mode) \(item) \(known): \(gain.decibels) dB")
            }
        }
    }

    @Test func theTargetAndThePeakBoundAMeasuredGain() {
        var settings = ReplayGainSettings(mode: .loudness, targetLUFS: -23)
        #expect(settings.gain(tags: nil, loudness: .measured(Self.quiet), prefersAlbum: false).decibels == 5)
        // +10 dB to −18 would lift a −3 dBTP peak past full scale: the gain stops at +3.
        settings.targetLUFS = -18
        let peaky = Loudness(integrated: -28, range: 4, truePeak: -3)
        #expect(settings.gain(tags: nil, loudness: .measured(peaky), prefersAlbum: false).decibels == 3)
    }

    /// An opening's loudness lowers a loud item as a measurement would, and never raises a
    /// quiet one past the preamp; tags still rule where the mode takes them.
    @Test func aProvisionalGainLowersButNeverRaises() {
        let settings = ReplayGainSettings(mode: .auto, preampDB: 1)
        let loud = Loudness(integrated: -10, range: 4, truePeak: -1)
        #expect(
            settings.gain(tags: nil, loudness: .measured(loud), prefersAlbum: false, provisional: true)
                == AppliedGain(decibels: -7, source: .provisional))
        #expect(
            settings.gain(tags: nil, loudness: .measured(Self.quiet), prefersAlbum: false, provisional: true)
                == AppliedGain(decibels: 1, source: .provisional))
        #expect(settings.gain(tags: Self.tags, loudness: .measured(loud), prefersAlbum: false, provisional: true).source == .tags)
    }

    @Test func autoTakesTheAlbumGainBesideItsAlbum() {
        let settings = ReplayGainSettings(mode: .auto)
        #expect(settings.gain(tags: Self.tags, loudness: .measured(Self.quiet), prefersAlbum: true).decibels == -6)
        #expect(settings.gain(tags: Self.tags, loudness: .measured(Self.quiet), prefersAlbum: false).decibels == -4)
    }
}
