import TonearmMedia

/// What a caller asks of a worker thread that no one else needs to see at once: queued in order
/// (`EngineCommands`, engine lock) and taken by the thread it is for at the top of its loop, into
/// that thread's own state. What every thread must see the moment it changes (the epoch, the
/// target, the next item, the play intent) is not a command: it is the shared record itself.
enum EngineCommand {
    // For the output thread.
    /// The software volume, a gain factor 0…1.
    case setVolume(Double)
    /// A fade over the volume, or a duck beside it, from the next write.
    case fade(FadeRequest)
    case duck(FadeRequest)
    /// Paused: drop what the device holds unheard and refill from what is heard (true), or
    /// not any more (false: a play came first).
    case refillWhilePaused(Bool)
    /// The item after `after` was replaced once partly handed to the device: take it back,
    /// unless `epoch` has passed meanwhile.
    case takeBack(after: Int, epoch: Int)
    /// A stop: a lost device is no longer tried again.
    case forgetLostDevice

    // For the decoder thread.
    /// How long an item and the next overlap, seconds.
    case setCrossfade(Double)

    // For both.
    case setReplayGain(ReplayGainSettings)
}

/// The two threads' command queues. Each keeps the capacity it grew to, and a thread takes its
/// commands by swapping the queue with an empty one of its own: nothing allocates once both have
/// been as long before (the output thread may not allocate). Engine lock.
struct EngineCommands {
    private(set) var output: [EngineCommand] = []
    private(set) var decoder: [EngineCommand] = []

    init() {
        output.reserveCapacity(16)
        decoder.reserveCapacity(16)
    }

    mutating func send(_ command: EngineCommand) {
        switch command {
        case .setVolume, .fade, .duck, .refillWhilePaused, .takeBack, .forgetLostDevice: output.append(command)
        case .setCrossfade: decoder.append(command)
        case .setReplayGain:
            output.append(command)
            decoder.append(command)
        }
    }

    /// Hands `thread`'s queued commands over in `taken` (emptied first), leaving its queue empty.
    mutating func take(for thread: EngineThread, into taken: inout [EngineCommand]) {
        taken.removeAll(keepingCapacity: true)
        switch thread {
        case .output: swap(&taken, &output)
        case .decoder: swap(&taken, &decoder)
        }
    }
}
