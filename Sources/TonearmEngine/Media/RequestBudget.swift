import CFFmpeg
import Foundation

/// How many URLs FFmpeg may open for one item: the media itself, and what it names (an HLS
/// master playlist's variants, their playlists and segments). A playlist that names itself, or
/// playlists that name each other, made FFmpeg 5.1's HLS demuxer open them without end (37,766
/// requests in 11 s, 700 MiB): it has no option for nesting or variants. Every open goes
/// through the context's `io_open`, nested contexts' too (they share its `opaque`), so that is
/// where the budget is kept: up to `burst` opens at once, then `perSecond` a second (a live
/// HLS stream reloads its playlist and fetches a segment every few seconds). Past it, opens
/// fail (`EPERM`), and the item fails with a message naming the bound.
///
/// The same hook passes the TLS checks (`tls_verify`, `ca_file`) to every https URL opened for
/// the item: FFmpeg's HLS demuxer hands its segments and playlists only the options it saved
/// from the first connection (headers, user agent, …), not these, so a verified playlist's
/// segments were fetched unverified.
///
/// Used on the item's decoder thread only, where FFmpeg calls `io_open`.
final class RequestBudget {
    static let burst = 32.0
    static let perSecond = 2.0

    private var tokens = RequestBudget.burst
    private var refilledAt = EngineLock.now()
    private(set) var refused = 0
    private let defaultOpen: IOOpen?
    /// The CA file to verify https peers against; nil: no verification (`input.tls_verify = false`).
    private let verifyAgainst: String?

    typealias IOOpen =
        @convention(c) (
            UnsafeMutablePointer<AVFormatContext>?,
            UnsafeMutablePointer<UnsafeMutablePointer<AVIOContext>?>?,
            UnsafePointer<CChar>?, Int32, UnsafeMutablePointer<OpaquePointer?>?
        ) -> Int32

    /// Installs the budget on `context` (before it opens anything); the context must not outlive it.
    init(installedOn context: UnsafeMutablePointer<AVFormatContext>, verifyAgainst: String?) {
        defaultOpen = context.pointee.io_open
        self.verifyAgainst = verifyAgainst
        context.pointee.opaque = Unmanaged.passUnretained(self).toOpaque()
        context.pointee.io_open = { context, pb, url, flags, options in
            guard let opaque = context?.pointee.opaque else { return tonearm_averror(EPERM) }
            let budget = Unmanaged<RequestBudget>.fromOpaque(opaque).takeUnretainedValue()
            guard budget.take() else { return tonearm_averror(EPERM) }
            if let url, let options, strncasecmp(url, "https:", 6) == 0 {
                av_dict_set(options, "tls_verify", budget.verifyAgainst == nil ? "0" : "1", 0)
                if let ca = budget.verifyAgainst { av_dict_set(options, "ca_file", ca, 0) }
            }
            return budget.defaultOpen?(context, pb, url, flags, options) ?? tonearm_averror(ENOSYS)
        }
    }

    private func take() -> Bool {
        let now = EngineLock.now()
        tokens = min(Self.burst, tokens + (now - refilledAt) * Self.perSecond)
        refilledAt = now
        guard tokens >= 1 else {
            refused += 1
            return false
        }
        tokens -= 1
        return true
    }

    var description: String {
        "it asked for more than \(Int(Self.burst)) URLs at once (HLS playlists that name themselves or each other, or too many variants)"
    }
}
