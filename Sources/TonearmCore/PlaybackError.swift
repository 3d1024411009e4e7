/// Why playback failed. `isRecoverable` says whether `retry` may help (the device may come
/// back, a file may be replaced); a file that is not media stays broken however often it is retried.
package struct PlaybackError: Error, Equatable, Hashable, Sendable, CustomStringConvertible {
    package enum Kind: String, Sendable, CaseIterable, Codable {
        case fileNotFound = "file_not_found"
        case permissionDenied = "permission_denied"
        case unsupportedFormat = "unsupported_format"
        case noAudioStream = "no_audio_stream"
        case decodeFailed = "decode_failed"
        case ioError = "io_error"
        case deviceUnavailable = "device_unavailable"
        case deviceLost = "device_lost"
        case invalidRequest = "invalid_request"
        /// A network source could not be reached, or was lost and not regained.
        case network = "network"
        /// An https server's certificate could not be verified (not recoverable by `retry`:
        /// trust is configured, `input.ca_file`, not waited for).
        case tls = "tls"
        case `internal` = "internal"
    }

    package var kind: Kind
    package var message: String

    package init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    package var isRecoverable: Bool {
        switch kind {
        case .fileNotFound, .permissionDenied, .ioError, .deviceUnavailable, .deviceLost, .network: true
        case .unsupportedFormat, .noAudioStream, .decodeFailed, .invalidRequest, .tls, .internal: false
        }
    }

    package var description: String { "\(kind.rawValue): \(message)" }
}
