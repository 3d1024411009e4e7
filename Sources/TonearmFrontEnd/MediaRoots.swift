import Foundation
import TonearmCore

/// Media confinement (`input.roots`): a local path outside every root, once `..` and symbolic
/// links are resolved, is refused before any file is opened, playlists and their entries too.
/// No roots: everything the daemon can read.
package struct MediaRoots: Sendable, Equatable {
    /// Resolved root paths.
    package let paths: [String]

    package init(_ roots: [String]) {
        paths = roots.map { Self.resolve($0) }
    }

    package var isOpen: Bool { paths.isEmpty }

    /// `..` and symbolic links resolved, as far as the path exists (a missing file is checked by
    /// where it would be).
    package static func resolve(_ path: String) -> String {
        URL(fileURLWithPath: path).standardizedFileURL.resolvingSymlinksInPath().path
    }

    /// Whether a local file lies inside a root; roots confine local files only.
    package func contains(_ url: URL) -> Bool {
        guard !isOpen, url.isFileURL else { return true }
        let resolved = Self.resolve(url.path)
        return paths.contains { root in resolved == root || resolved.hasPrefix(root == "/" ? "/" : root + "/") }
    }

}
