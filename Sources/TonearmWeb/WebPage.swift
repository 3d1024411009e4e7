import Foundation

/// The page's files as served: each with its type, its bytes, the same gzipped (sent to a
/// browser that accepts gzip) and an ETag. Embedded at build time (`EmbeddedPage.swift`, made
/// by scripts/embed-web-page.py from Sources/TonearmWeb/Page): nothing is read or fetched at
/// run time.
struct WebPage: Sendable {
    struct File: Sendable {
        let type: String
        let body: [UInt8]
        let gzipped: [UInt8]
        let etag: String
    }

    static let shared = WebPage()

    /// By URL path ("/index.html").
    let files: [String: File]

    private init() {
        var files: [String: File] = [:]
        for file in embeddedPageFiles {
            let body = Array(file.text.utf8)
            files["/" + file.name] = File(
                type: file.type, body: body, gzipped: Array(Data(base64Encoded: file.gzip) ?? Data()),
                etag: Self.etag(body))
        }
        self.files = files
    }

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
