/// Why the engine could not open, decode or output an item. The adapter maps it onto the
/// core's `PlaybackError` (same kinds), keeping the engine free of the core.
package struct EngineFailure: Error, Sendable, Equatable, CustomStringConvertible {
    package enum Kind: String, Sendable {
        case fileNotFound, permissionDenied, unsupportedFormat, noAudioStream, decodeFailed, ioError
        case deviceUnavailable, deviceLost
        /// A network source could not be reached, or was lost and not regained.
        case network
        /// An https server whose certificate could not be verified for its host.
        case tls
        /// A path no file system can hold (too long): trying again cannot help.
        case invalidPath
    }

    package var kind: Kind
    package var message: String

    package init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    package var description: String { message }

    /// The output device failed, not the item: skipping to another item would not help.
    package var isDeviceFailure: Bool { kind == .deviceUnavailable || kind == .deviceLost }
}
