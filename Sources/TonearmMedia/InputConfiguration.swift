import Foundation

/// How the engine reads its sources (the config's `[input]` table): which protocols FFmpeg may
/// open, and how network sources are buffered, timed out and reconnected.
package struct InputConfiguration: Sendable, Equatable {
    /// The protocols a source may use, by URL scheme. Only these three have the behaviour the
    /// engine builds on (files are stat-checked; http and https are buffered and reconnected).
    package static let supportedProtocols = ["file", "http", "https"]

    package var protocols: [String]
    /// Audio buffered before a network source is heard, and again after it ran dry.
    package var prebufferSeconds: Double
    /// A network read or connect that gets nothing for this long fails (and is retried).
    package var timeoutSeconds: Double
    /// How long a dropped network source is retried; 0 retries for ever.
    package var reconnectForSeconds: Double
    /// An https server must show a certificate that a trusted authority signed for its host name
    /// (`input.tls_verify`). FFmpeg checks nothing unless told.
    package var tlsVerify: Bool
    /// The authorities trusted for that (`input.ca_file`, PEM); the system's store by default.
    package var caFile: String

    package static let systemCAFile = "/etc/ssl/certs/ca-certificates.crt"
    /// `input.roots`, resolved: a local file is opened only if the file opened lies inside one
    /// (empty: any file the daemon can read). Checked again on the file opened, not only when
    /// an item is queued.
    package var roots: [String] = []

    package init(
        protocols: [String] = InputConfiguration.supportedProtocols, prebufferSeconds: Double = 1,
        timeoutSeconds: Double = 10, reconnectForSeconds: Double = 300, tlsVerify: Bool = true,
        caFile: String = InputConfiguration.systemCAFile
    ) {
        self.protocols = protocols
        self.prebufferSeconds = prebufferSeconds
        self.timeoutSeconds = timeoutSeconds
        self.reconnectForSeconds = reconnectForSeconds
        self.tlsVerify = tlsVerify
        self.caFile = caFile
    }

    /// The URL's protocol ("file" for a file URL), lower-cased.
    package static func scheme(of url: URL) -> String { url.isFileURL ? "file" : (url.scheme ?? "").lowercased() }

    package static func isNetwork(_ url: URL) -> Bool { ["http", "https"].contains(scheme(of: url)) }

    package func allows(_ url: URL) -> Bool { protocols.contains(Self.scheme(of: url)) }

    /// FFmpeg's `protocol_whitelist`: the allowed protocols and the transports they run on (http
    /// on tcp, https on tls on tcp). A URL given to the engine is checked against `protocols`
    /// itself first, so `tcp:` or `tls:` named directly never reaches FFmpeg; FFmpeg's http
    /// follows redirects only to http and https, and the whitelist stops the one it must not take.
    package var ffmpegWhitelist: String { whitelist(of: protocols) }

    /// The whitelist for everything a network source opens, playlists and segments included:
    /// network protocols only, so a station's HLS playlist cannot name a local file.
    package var networkWhitelist: String { whitelist(of: protocols.filter { $0 == "http" || $0 == "https" }) }

    private func whitelist(of protocols: [String]) -> String {
        var names = protocols
        if protocols.contains("http") || protocols.contains("https") { names.append("tcp") }
        if protocols.contains("https") { names.append("tls") }
        return names.joined(separator: ",")
    }
}
