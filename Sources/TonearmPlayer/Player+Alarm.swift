import Foundation
import TonearmCore

/// An alarm rings (`AlarmClock`): its URL (an item of the queue already, else added at the
/// queue's end) or the queue from its first item plays, fading in from silence.
extension Player {
    func ring(_ alarm: Alarm) {
        Task { [self] in
            // An alarm is the room's: a cast ends first, and the alarm picks from the queue given back.
            await endCastForLocalCommand()
            if let volume = alarm.volume { _ = setVolume(level: volume) }
            let id: Int?
            if let text = alarm.url, let url = URL(string: text) {
                if let queued = queue.items.first(where: { $0.url == url }) {
                    id = queued.id
                } else {
                    do throws(PlayerError) { id = try add([(url, nil)]).items.first?.id } catch {
                        logger.warning("alarm cannot queue its URL", metadata: ["alarm": "\(alarm.id)", "error": "\(error)"])
                        return
                    }
                }
            } else {
                id = model.withLock { $0.queue.first }
            }
            guard let id else {
                logger.warning("alarm rang with an empty queue: nothing to play", metadata: ["alarm": "\(alarm.id)"])
                return
            }
            engine.fade(from: 0, to: 1, over: alarm.fadeIn)
            do throws(PlayerError) { _ = try await play(id: id) } catch {
                logger.warning("alarm could not play", metadata: ["alarm": "\(alarm.id)", "error": "\(error)"])
                // Nothing was written: the fade-in must not meet what plays later.
                engine.fade(to: 1, over: 0)
            }
        }
    }
}
