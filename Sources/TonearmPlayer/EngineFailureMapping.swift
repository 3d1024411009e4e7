import TonearmCore
import TonearmEngine

extension PlaybackError {
    /// The core's error for an engine failure: the kinds correspond one to one.
    init(_ failure: EngineFailure) {
        let kind: PlaybackError.Kind =
            switch failure.kind {
            case .fileNotFound: .fileNotFound
            case .permissionDenied: .permissionDenied
            case .unsupportedFormat: .unsupportedFormat
            case .noAudioStream: .noAudioStream
            case .decodeFailed: .decodeFailed
            case .ioError: .ioError
            case .deviceUnavailable: .deviceUnavailable
            case .deviceLost: .deviceLost
            case .invalidPath: .invalidRequest
            case .network: .network
            case .tls: .tls
            }
        self.init(kind, failure.message)
    }
}

extension PlaybackError {
    /// The output device failed, not the item.
    var isDeviceFailure: Bool { kind == .deviceUnavailable || kind == .deviceLost }
}
