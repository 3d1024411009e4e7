import Foundation

/// The page's files as served: each with its type, its bytes, the same gzipped (sent to a
/// browser that accepts gzip) and an ETag. The files of Sources/TonearmWeb/Page are built into
/// the binary (`PackageResources`, SwiftPM's `embedInCode`): nothing is read or fetched at run
/// time. Made when the page is first served, so a daemon without the web remote never makes it.
struct WebPage: Sendable {
    struct File: Sendable {
        let type: String
        let body: [UInt8]
        /// nil when it could not be made: the body is sent as it is.
        let gzipped: [UInt8]?
        let etag: String
    }

    static let shared = WebPage()

    /// By URL path ("/index.html").
    let files: [String: File]

    private init() {
        var files: [String: File] = [:]
        for (name, type, body) in Self.embedded {
            files["/" + name] = File(type: type, body: body, gzipped: Gzip.compress(body), etag: Self.etag(body))
        }
        self.files = files
    }

    /// The page's files: name, type and bytes.
    static let embedded: [(name: String, type: String, body: [UInt8])] = [
        ("app.js", "text/javascript; charset=utf-8", PackageResources.app_js),
        ("icon.svg", "image/svg+xml", PackageResources.icon_svg),
        ("index.html", "text/html; charset=utf-8", PackageResources.index_html),
        ("style.css", "text/css; charset=utf-8", PackageResources.style_css),
    ]

    /// A strong validator: FNV-1a of the bytes (a cache key, not a secret).
    static func etag(_ bytes: [UInt8]) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash &*= 0x100_0000_01b3
        }
        return "\"" + String(hash, radix: 16) + "-" + String(bytes.count, radix: 16) + "\""
    }
}
