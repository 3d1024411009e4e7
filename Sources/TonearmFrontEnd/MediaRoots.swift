import Foundation
import TonearmCore

/// Media confinement (`input.roots`): a local path outside every root, once `..` and symbolic
/// links are resolved, is refused before any file is opened, playlists and their entries too.
/// No roots: everything the daemon can read.
public struct MediaRoots: Sendable, Equatable {
    /// Resolved root paths.
    public let paths: [String]

    public init(_ roots: [String]) {
        paths = roots.map { Self.resolve($0) }
    }

    public var isOpen: Bool { paths.isEmpty }

    /// `..` and symbolic links resolved, as far as the path exists (a missing file is checked by
    /// where it would be).
    package static func resolve(_ path: String) -> String {
        URL(fileURLWithPath: path).standardizedFileURL.resolvingSymlinksInPath().path
    }

    /// Whether a local file lies inside a root; roots confine local files only.
    public func contains(_ url: URL) -> Bool {
        guard !isOpen, url.isFileURL else { return true }
        let resolved = Self.resolve(url.path)
        return paths.contains { root in resolved == root || resolved.hasPrefix(root == "/" ? "/" : root + "/") }
    }

}
