import CFFmpeg

extension MediaDecoder {
    /// Frames decoded before a seek's target and dropped. A lossy decoder's first frames after
    /// a jump lack what came before them (an MP3's bit reservoir and the overlap of its
    /// transform, AAC's and Vorbis's overlap, Opus's stated `seek_preroll`): started this far
    /// before, what reaches the target is what a decode from the start gives there. A lossless
    /// codec's frames stand alone: it starts at the target.
    static func seekPrerollFrames(_ codec: UnsafeMutablePointer<AVCodecContext>, outputRate: Int) -> Int64 {
        if let descriptor = avcodec_descriptor_get(codec.pointee.codec_id),
            descriptor.pointee.props & AV_CODEC_PROP_LOSSLESS != 0
        {
            return 0
        }
        let rate = Int64(outputRate)
        let stated =
            codec.pointee.sample_rate > 0
            ? Int64(codec.pointee.seek_preroll) * rate / Int64(codec.pointee.sample_rate) : 0
        return max(rate / 10, stated)
    }
}
