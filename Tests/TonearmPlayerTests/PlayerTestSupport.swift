import Logging
import TonearmEngine
import TonearmMedia

@testable import TonearmPlayer

extension Player {
    /// A player on the real engine with ALSA's `null` device (paced like a sound card, or not).
    static func onNullDevice(pace: Bool = false, speed: Double = 1) -> Player {
        Player(
            engine: PlayerEngine(configuration: OutputConfiguration(device: "null", pace: pace, speed: speed)),
            logger: Logger(label: "test"))
    }
}
