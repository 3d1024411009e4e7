import TonearmMedia

/// Mixing one frame of PCM into another, in place: each sample becomes itself × `keep` plus the
/// other's × `add`, rounded and clipped to the sample type (float is not clipped: the device
/// or the next stage does). A crossfade's curve (`CrossfadeTail`) and a clip over the music
/// (`OverlayRing`) both mix this way.
enum PCMMix {
    @inline(__always)
    static func frame(
        into destination: UnsafeMutableRawPointer, at target: Int, from source: UnsafeRawPointer, at origin: Int,
        channels: Int, type: SampleType, keep: Double, add: Double
    ) {
        switch type {
        case .s16:
            let other = source.assumingMemoryBound(to: Int16.self)
            let mixed = destination.assumingMemoryBound(to: Int16.self)
            for channel in 0..<channels {
                let value = Double(mixed[target + channel]) * keep + Double(other[origin + channel]) * add
                mixed[target + channel] = Int16(min(max(value.rounded(), -32768), 32767))
            }
        case .s32:
            let other = source.assumingMemoryBound(to: Int32.self)
            let mixed = destination.assumingMemoryBound(to: Int32.self)
            for channel in 0..<channels {
                let value = Double(mixed[target + channel]) * keep + Double(other[origin + channel]) * add
                mixed[target + channel] = Int32(min(max(value.rounded(), -2_147_483_648), 2_147_483_647))
            }
        case .float:
            let other = source.assumingMemoryBound(to: Float.self)
            let mixed = destination.assumingMemoryBound(to: Float.self)
            for channel in 0..<channels {
                mixed[target + channel] = Float(Double(mixed[target + channel]) * keep + Double(other[origin + channel]) * add)
            }
        }
    }
}
