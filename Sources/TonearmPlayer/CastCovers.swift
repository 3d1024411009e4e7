import Foundation
import TonearmEngine
import TonearmMedia
import TonearmSync

/// What a front-end gets when it asks for a cast item's cover.
package enum CastCover: Sendable, Equatable {
    case found(EmbeddedPicture)
    /// The control point named a cover that could not be had (why, in words).
    case failed(String)
}

/// The covers a cast's control point names (DIDL-Lite `albumArtURI`), fetched by the daemon for
/// every front-end that shows one: the web remote (whose page loads nothing from another
/// host), MPD's `albumart`/`readpicture`. Each is fetched once, on a thread of its own (started
/// at the first ask: a daemon nobody casts to has none), and the latest few answers are kept:
/// the current item's and the next one's, asked again at every page load and song change.
final class CastCovers: Sendable {
    private struct Kept: Sendable {
        var thread: JobThread?
        var answers: [(url: URL, answer: CastCover)] = []
    }

    private static let keptAnswers = 4
    private let kept = Locked(Kept())

    func cover(_ url: URL, input: InputConfiguration) async -> CastCover {
        if let answer = kept.withLock({ k in k.answers.last(where: { $0.url == url })?.answer }) { return answer }
        let thread = kept.withLock { k in
            if let thread = k.thread { return thread }
            let thread = JobThread(name: "tonearm-covers")
            k.thread = thread
            return thread
        }
        return await withCheckedContinuation { (continuation: CheckedContinuation<CastCover, Never>) in
            thread.async { [kept] in
                // Asked twice while the first fetch ran: the second waited behind it, and takes its answer.
                if let answer = kept.withLock({ k in k.answers.last(where: { $0.url == url })?.answer }) {
                    return continuation.resume(returning: answer)
                }
                let answer: CastCover
                do throws(RemotePicture.Failure) { answer = .found(try RemotePicture.fetch(url, input: input)) } catch {
                    answer = .failed(error.description)
                }
                kept.withLock { k in
                    k.answers.append((url, answer))
                    if k.answers.count > Self.keptAnswers { k.answers.removeFirst() }
                }
                continuation.resume(returning: answer)
            }
        }
    }

    deinit { kept.withLock { $0.thread }?.finish() }
}
