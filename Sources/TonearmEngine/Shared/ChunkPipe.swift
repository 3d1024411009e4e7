import TonearmMedia

/// How a run of chunks begins: the first chunk the decoder produces after an open, a seek or a
/// pre-roll says what the output thread must do and announce when it reaches it.
enum RunStart: Equatable {
    /// A loaded item's first frames: the output prepares the device, then posts `ready`.
    case opened
    /// A seek's first frames: the device drops what it holds, then `seekCompleted` is posted.
    case seek(token: Int)
    /// The next queued item, decoded ahead: it follows the previous item sample for sample when
    /// the format is the same (gapless), or after the device played out and reopened if not.
    case advance
}

/// One block of interleaved PCM of one item. The memory is allocated once with the pool and
/// reused for the daemon's life (no allocation on the audio path).
///
/// Ownership, never shared: a chunk is either in the pool's free list, or held by the decoder
/// thread while it fills it, or in the pipe's FIFO, or held by the output thread while it is the
/// FIFO's head. The free list and the FIFO change only under the engine lock; the bytes and the
/// header are written only by the one thread that holds the chunk at that moment.
final class PCMChunk {
    static let byteCapacity = 64 * 1024

    let bytes: UnsafeMutableRawPointer
    /// Its place in the pool.
    let index: Int
    /// The engine's epoch when it was filled: a chunk of an older epoch is void (a seek, load or stop came).
    var epoch = 0
    var itemID = 0
    var format = PCMFormat(sampleType: .s16, sampleRate: 44100, channels: 2)
    /// Track frame of the chunk's first frame.
    var position: Int64 = 0
    var frames = 0
    /// Frames the output thread has already written (output thread only).
    var written = 0
    /// Frames the gain stage has already scaled: a short write leaves some to write again, and
    /// they must not be scaled twice (output thread only).
    var gained = 0
    /// Set on the first chunk of a run; cleared by the output thread once it has acted on it.
    var runStart: RunStart?
    /// The item's last chunk (it may hold no frames).
    var endsItem = false
    /// A run's first chunk whose `ready` was posted while the device was awaited (output thread only).
    var announcedReady = false
    /// The item's ReplayGain tags, and whether `auto` takes its album gain (the output's gain stage).
    var replayGain: ReplayGainInfo?
    var prefersAlbumGain = false
    /// A live stream's automatic gain when the chunk was filled, dB (nil: none).
    var liveGainDB: Double?
    /// The item is read over the network: the output prebuffers it, and refills it when it ran dry.
    var isNetwork = false
    /// A stream title that starts with this chunk's first frame (announced when that is heard).
    var streamTitle: StreamTitle?

    init(index: Int) {
        self.index = index
        bytes = UnsafeMutableRawPointer.allocate(byteCount: Self.byteCapacity, alignment: 16)
    }
    deinit { bytes.deallocate() }

    var capacityFrames: Int { Self.byteCapacity / format.bytesPerFrame }
    var seconds: Double { Double(frames) / Double(format.sampleRate) }
    var remainingFrames: Int { frames - written }

    func reset(
        epoch: Int, itemID: Int, format: PCMFormat, position: Int64, runStart: RunStart?,
        replayGain: ReplayGainInfo?, prefersAlbumGain: Bool, isNetwork: Bool
    ) {
        self.isNetwork = isNetwork
        liveGainDB = nil
        streamTitle = nil
        self.replayGain = replayGain
        self.prefersAlbumGain = prefersAlbumGain
        self.epoch = epoch
        self.itemID = itemID
        self.format = format
        self.position = position
        self.runStart = runStart
        frames = 0
        written = 0
        gained = 0
        endsItem = false
        announcedReady = false
    }
}

/// The bounded pipe between the decoder thread and the output thread, as MPD's MusicPipe: a
/// fixed pool of chunks, a FIFO of filled ones, and a free list. Every method runs with the
/// engine lock held; the arrays are sized once so that no call allocates.
final class ChunkPipe {
    let chunks: [PCMChunk]
    private var free: [Int]
    /// Indices into `chunks`, oldest first, as a ring.
    private var fifo: [Int]
    private var head = 0
    private(set) var count = 0
    /// Seconds of audio queued (whole chunks, whatever their rates).
    private(set) var bufferedSeconds = 0.0

    init(chunkCount: Int) {
        chunks = (0..<chunkCount).map { PCMChunk(index: $0) }
        free = Array((0..<chunkCount).reversed())
        free.reserveCapacity(chunkCount)
        fifo = Array(repeating: 0, count: chunkCount)
    }

    var freeCount: Int { free.count }
    var capacity: Int { chunks.count }
    var isEmpty: Bool { count == 0 }

    /// A chunk for the decoder to fill, or nil when all are in use.
    func takeFree() -> PCMChunk? {
        guard let index = free.popLast() else { return nil }
        return chunks[index]
    }

    /// Gives a chunk back to the free list (the decoder's unused one, or the output's written one).
    func recycle(_ chunk: PCMChunk) {
        free.append(chunk.index)
    }

    func push(_ chunk: PCMChunk) {
        fifo[(head + count) % fifo.count] = chunk.index
        count += 1
        bufferedSeconds += chunk.seconds
    }

    var first: PCMChunk? { count > 0 ? chunks[fifo[head]] : nil }

    /// Removes the head and returns it to the free list.
    func popFirst() {
        guard count > 0 else { return }
        bufferedSeconds = count == 1 ? 0 : max(0, bufferedSeconds - chunks[fifo[head]].seconds)
        free.append(fifo[head])
        head = (head + 1) % fifo.count
        count -= 1
    }

    /// Whether any queued chunk satisfies `predicate` (a few dozen at most).
    func contains(where predicate: (PCMChunk) -> Bool) -> Bool {
        for offset in 0..<count where predicate(chunks[fifo[(head + offset) % fifo.count]]) { return true }
        return false
    }
}
