import Foundation
import TonearmCore
import TonearmFrontEnd
import TonearmPlayer

extension SourcePolicy {
    /// Throws `permission_denied` naming the protocol or the root (`refusal`).
    func check(_ url: URL) throws(PlayerError) {
        if let reason = refusal(url) { throw .failed(PlaybackError(.permissionDenied, reason)) }
    }

    /// `refusal(adding:)` as `permission_denied`.
    func check(adding urls: some Sequence<URL>) throws(PlayerError) {
        if let (_, reason) = refusal(adding: urls) { throw .failed(PlaybackError(.permissionDenied, reason)) }
    }
}
