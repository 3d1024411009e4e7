import Foundation
import Testing
import TonearmCore
import TonearmMedia

@testable import TonearmPlayer

/// The core keeps the crossfade it is given; the player keeps it within `Bounds.crossfadeSeconds`,
/// whether it comes from a client or from a hand-edited state file.
@Suite("Player: crossfade within its bounds", .serialized, .timeLimit(.minutes(1)))
struct CrossfadeBoundsTests {
    private func saved(crossfade: Double) -> SavedPlayerState {
        var queue = PlayQueue()
        queue.setOptions(QueueOptions(crossfade: crossfade), randomSeed: 1)
        return SavedPlayerState(queue: queue, playback: .stopped, position: 0, volume: 100, replayGain: ReplayGainSettings())
    }

    @Test(arguments: [(99.0, 15.0), (-3, 0), (.nan, 0), (.infinity, 0), (4.5, 4.5), (15, 15)])
    func aSavedCrossfadeIsBroughtIntoBounds(saved value: Double, restored: Double) {
        let player = Player.onNullDevice()
        player.restore(saved(crossfade: value), resuming: .off)
        #expect(player.queue.options.crossfade == restored)
    }

    @Test(arguments: [(20.0, 15.0), (-1, 0), (.nan, 0), (7, 7)])
    func aSetCrossfadeIsBroughtIntoBounds(set value: Double, kept: Double) {
        let player = Player.onNullDevice()
        let options = player.setOptions { $0.crossfade = value }
        #expect(options.crossfade == kept && player.queue.options.crossfade == kept)
    }
}
