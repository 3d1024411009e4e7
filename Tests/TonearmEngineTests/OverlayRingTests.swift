import Testing
import TonearmMedia

@testable import TonearmEngine

/// The ring a clip over the music passes through: what goes in comes out in order across the
/// ring's wrap, added at the clip's gain, rounded and clipped.
@Suite("Overlay ring")
struct OverlayRingTests {
    static let format = PCMFormat(sampleType: .s16, sampleRate: 1000, channels: 2)

    @Test func framesComeOutInOrderAcrossTheWrapAtTheirGain() {
        let ring = OverlayRing(itemID: 1, format: Self.format, gain: 0.5)
        #expect(ring.capacity == 1024 && ring.room == 1024)
        var next: Int16 = 0
        var expected: [Int16] = []
        var music = [Int16]()
        // Three rounds of 700 frames in, 700 mixed out: the second and third wrap.
        for _ in 0..<3 {
            var piece = [Int16]()
            for _ in 0..<700 {
                piece += [next, -next]
                next &+= 3
            }
            piece.withUnsafeBytes { ring.fill(from: $0.baseAddress!, frames: 700, at: ring.written) }
            ring.written += 700
            #expect(ring.available == 700)
            var out = [Int16](repeating: 1000, count: 1400)
            out.withUnsafeMutableBytes { ring.mix(into: $0.baseAddress!, frames: 700, from: ring.mixed) }
            ring.mixed += 700
            music += out
            expected += piece.map { Int16((1000 + Double($0) * 0.5).rounded()) }
        }
        #expect(music == expected)
        ring.ended = true
        #expect(ring.isDone)
    }

    @Test func theMixClipsAtFullScale() {
        let ring = OverlayRing(itemID: 1, format: Self.format, gain: 1)
        let loud: [Int16] = [30_000, -30_000]
        loud.withUnsafeBytes { ring.fill(from: $0.baseAddress!, frames: 1, at: 0) }
        ring.written = 1
        var out: [Int16] = [10_000, -10_000]
        out.withUnsafeMutableBytes { ring.mix(into: $0.baseAddress!, frames: 1, from: 0) }
        #expect(out == [32_767, -32_768])
    }
}
