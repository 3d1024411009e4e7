import Foundation
import Testing
import TonearmMedia

@testable import TonearmEngine

/// The decoder's kept-back tail: a ring that hands on its oldest frames and keeps the newest,
/// and the equal-power mix of what it kept into the next item's frames, in every sample type.
@Suite("Crossfade tail: ring and mix")
struct CrossfadeTailTests {
    /// Frames 0, 1, 2, … of one s16 channel, appended in pieces: once the ring is full, the
    /// oldest go on in order, across its wrap; the newest `capacity` stay.
    @Test func keepsTheNewestFramesAndHandsOnTheOldestInOrder() {
        let tail = CrossfadeTail()
        let format = PCMFormat(sampleType: .s16, sampleRate: 1000, channels: 1)
        tail.begin(itemID: 7, format: format, frames: 10)
        var handedOn: [Int16] = []
        var next: Int16 = 0
        for piece in [3, 4, 5, 1, 7, 2, 6] {
            // As the decoder does: the oldest make room first, then the new frames go in.
            let room = max(0, piece - tail.free)
            var out = [Int16](repeating: 0, count: room)
            out.withUnsafeMutableBytes { tail.takeOldest(into: $0.baseAddress!, frames: room) }
            handedOn += out
            let frames = (0..<piece).map { Int16($0) + next }
            next += Int16(piece)
            frames.withUnsafeBytes { tail.append(from: $0.baseAddress!, frames: piece) }
        }
        #expect(handedOn == (0..<Int16(next - 10)).map { $0 })
        #expect(tail.count == 10 && tail.itemID == 7)
        var kept = [Int16](repeating: 0, count: 10)
        kept.withUnsafeMutableBytes { tail.takeOldest(into: $0.baseAddress!, frames: 10) }
        #expect(kept == (next - 10..<next).map { $0 })
        #expect(tail.count == 0)
    }

    /// The curve is equal power at every frame, starts with the tail alone and ends near the
    /// item alone.
    @Test func theCurveIsEqualPower() {
        for index in [0, 1, 250, 500, 999] {
            let (incoming, outgoing) = CrossfadeTail.curve(index: index, length: 1000)
            #expect(abs(incoming * incoming + outgoing * outgoing - 1) < 1e-12)
        }
        #expect(CrossfadeTail.curve(index: 0, length: 1000) == (0, 1))
    }

    /// Each sample type: the mix is incoming × sin + tail × cos × gain, rounded (integers) and
    /// clipped, from any index of the tail; the tail itself stays as it was.
    @Test(arguments: SampleType.allCases)
    func mixesAlongTheCurveInEverySampleType(_ type: SampleType) {
        let format = PCMFormat(sampleType: type, sampleRate: 1000, channels: 2)
        let length = 8
        let tailValues: [Double] = (0..<length * 2).map { Double($0 % 2 == 0 ? 30000 : -30000) * (type == .float ? 1 / 32768.0 : 1) }
        let inValues: [Double] = (0..<length * 2).map { Double($0 % 2 == 0 ? 20000 : -25000) * (type == .float ? 1 / 32768.0 : 1) }
        let tail = CrossfadeTail()
        tail.begin(itemID: 1, format: format, frames: length)
        tail.gain = 1.1
        let tailBytes = Self.bytes(tailValues, type)
        tailBytes.withUnsafeBytes { tail.append(from: $0.baseAddress!, frames: length) }
        for from in [0, 3] {
            var mixed = Self.bytes(Array(inValues[(from * 2)...]), type)
            mixed.withUnsafeMutableBytes { tail.mix(into: $0.baseAddress!, frames: length - from, from: from) }
            let values = Self.values(mixed, type)
            for sample in 0..<values.count {
                let frame = from + sample / 2
                let (incoming, outgoing) = CrossfadeTail.curve(index: frame, length: length)
                var expected = inValues[frame * 2 + sample % 2] * incoming + tailValues[frame * 2 + sample % 2] * outgoing * 1.1
                switch type {
                case .s16: expected = min(max(expected.rounded(), -32768), 32767)
                case .s32: expected = min(max(expected.rounded(), -2_147_483_648), 2_147_483_647)
                case .float: break
                }
                #expect(abs(values[sample] - expected) <= (type == .float ? 1e-6 : 0), "\(type) frame \(frame)")
            }
        }
        // The first frame is the tail alone, scaled and clipped: 30000 × 1.1 clips at 16 bits.
        var first = Self.bytes(Array(inValues), type)
        first.withUnsafeMutableBytes { tail.mix(into: $0.baseAddress!, frames: 1, from: 0) }
        if type == .s16 { #expect(Self.values(first, type)[0] == 32767) }
    }

    static func bytes(_ values: [Double], _ type: SampleType) -> [UInt8] {
        switch type {
        case .s16: values.map { Int16($0) }.withUnsafeBytes { Array($0) }
        case .s32: values.map { Int32($0) }.withUnsafeBytes { Array($0) }
        case .float: values.map { Float($0) }.withUnsafeBytes { Array($0) }
        }
    }

    static func values(_ bytes: [UInt8], _ type: SampleType) -> [Double] {
        bytes.withUnsafeBytes { raw in
            switch type {
            case .s16: raw.bindMemory(to: Int16.self).map(Double.init)
            case .s32: raw.bindMemory(to: Int32.self).map(Double.init)
            case .float: raw.bindMemory(to: Float.self).map(Double.init)
            }
        }
    }
}
