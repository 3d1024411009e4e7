import CFFmpeg
import Foundation
import Glibc
import TonearmMedia

/// Checks every HTTP request FFmpeg is about to send for an item (the first, each redirect's,
/// a reconnect's, an HLS playlist's or segment's) against `input.protocols`, before its first
/// byte leaves.
///
/// FFmpeg 5.1's http follows redirects inside one open and has no option to stop at one, and
/// its `protocol_whitelist` cannot tell a downgrade apart: with https allowed, tcp is on the
/// list (tls runs on it), so a redirect from https to plain http connected and sent its
/// request. The one moment FFmpeg shows where a request goes is its debug line "request: …",
/// logged by the http context just before it writes the request, when the context's `location`
/// names the URL. The log hook hands that context to the gate of the thread (the decoder's,
/// where FFmpeg does all of an item's I/O). A URL the item may not open trips the item's
/// cancellation flag, and the write, which asks the interrupt callback first, never happens.
final class RequestGate {
    private let input: InputConfiguration
    private let cancellation: CancellationFlag
    /// Requests checked so far. A connection opened with none seen means this FFmpeg no longer
    /// announces its requests, and the gate would be open: the open fails instead. The item's
    /// decoder thread's: written only by `check`, which runs on the thread the gate is entered
    /// on (FFmpeg logs a request on the thread that makes it), and read there by `MediaDecoder`.
    private(set) var requestsChecked = 0

    init(input: InputConfiguration, cancellation: CancellationFlag) {
        self.input = input
        self.cancellation = cancellation
    }

    /// Makes this the calling thread's gate until `leave(restoring:)` with what this returns.
    /// Set around each call into FFmpeg rather than once per thread: one decoder thread serves
    /// an item and the next, and a gate outlived by its thread's setting would dangle.
    func enter() -> UnsafeMutableRawPointer? {
        let previous = pthread_getspecific(Self.key)
        pthread_setspecific(Self.key, Unmanaged.passUnretained(self).toOpaque())
        return previous
    }

    static func leave(restoring previous: UnsafeMutableRawPointer?) {
        pthread_setspecific(key, previous)
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        precondition(pthread_key_create(&key, nil) == 0, "no thread-specific key for the request gate")
        return key
    }()

    /// From the log hook: the http context `context` is about to send a request on this thread.
    static func requestAboutToBeSent(by context: UnsafeMutableRawPointer) {
        guard let current = pthread_getspecific(key) else { return }
        Unmanaged<RequestGate>.fromOpaque(current).takeUnretainedValue().check(location(of: context))
    }

    private func check(_ location: String?) {
        requestsChecked += 1
        guard let location else {
            cancellation.refuse("FFmpeg was about to send a request without saying where")
            return
        }
        // An address that does not parse as a URL with a host is refused: FFmpeg's own parser
        // reads more into such an address ("http://host:1:2/") than this check could vouch for.
        guard let url = URL(string: location), url.host?.isEmpty == false, InputConfiguration.isNetwork(url), input.allows(url) else {
            let scheme = URL(string: location).map(InputConfiguration.scheme(of:)) ?? "?"
            cancellation.refuse(
                "a request to \(location) was stopped before it was sent: not an address of an allowed protocol ('\(scheme)'; input.protocols: \(input.protocols.joined(separator: ", ")))"
            )
            return
        }
    }

    /// The URL an http context is requesting (its `location` option, which each redirect updates).
    private static func location(of context: UnsafeMutableRawPointer) -> String? {
        var value: UnsafeMutablePointer<UInt8>?
        guard av_opt_get(context, "location", AV_OPT_SEARCH_CHILDREN, &value) >= 0, let value else { return nil }
        defer { av_free(value) }
        return String(cString: value)
    }
}
