import TonearmMedia

/// The clip mixed over the music (`playOverlay`), on the output thread: each piece of music
/// written takes as many of the clip's frames as its ring holds, added after the music's gain.
/// The clip goes on as the music is written: paused with it, and cut when the music's format
/// changes under it (the device reopened for another item) or nothing more is written. A clip
/// withdrawn fades out over 5 ms, then goes without news.
extension OutputWorker {
    struct OverlayPiece {
        let ring: OverlayRing
        let start: Int
        let frames: Int
        /// Withdrawn: where its fade-out stands.
        let fadeOut: (left: Int, length: Int)?

        func mix(into destination: UnsafeMutableRawPointer) {
            ring.mix(into: destination, frames: frames, from: start, fadeOut: fadeOut)
        }
    }

    /// The clip's frames for the next `frames` frames of `head` about to be scaled and written.
    /// Output thread, lock held.
    func overlayPiece(for head: PCMChunk, frames: Int) -> OverlayPiece? {
        shared.assertOn(.output)
        guard frames > 0, let ring = shared.overlay.ring else { return nil }
        guard ring.format == head.format else {
            shared.endOverlay(ring)
            return nil
        }
        var count = min(frames, ring.available)
        var fadeOut: (left: Int, length: Int)?
        if let left = ring.fadeOutLeft {
            count = min(count, left)
            fadeOut = (left, GainStage.rampFrames(sampleRate: ring.format.sampleRate))
            if count == 0 {
                // Faded out (or nothing left to fade): it goes, its news was given by its withdrawal.
                shared.overlay.ring = nil
                return nil
            }
        }
        return count > 0 ? OverlayPiece(ring: ring, start: ring.mixed, frames: count, fadeOut: fadeOut) : nil
    }

    /// The piece was mixed: its room goes back to the decoder, and a clip mixed to its end is
    /// over. Output thread, lock held.
    func overlayMixed(_ piece: OverlayPiece) {
        shared.assertOn(.output)
        let ring = piece.ring
        guard shared.overlay.ring === ring else { return }
        let halfFreeBefore = ring.room >= ring.capacity / 2
        ring.mixed += piece.frames
        if let left = ring.fadeOutLeft {
            ring.fadeOutLeft = left - piece.frames
            if left - piece.frames <= 0 || ring.available == 0 { shared.overlay.ring = nil }
            return
        }
        if !halfFreeBefore && ring.room >= ring.capacity / 2 { shared.lock.wakeDecoder() }
        if ring.isDone { shared.endOverlay(ring) }
    }
}
