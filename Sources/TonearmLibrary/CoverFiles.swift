import Foundation

/// An album's cover as a file beside its songs: `cover`, `folder` or `front` (in that order of
/// preference, any letter case, as rippers and taggers name it) with an image suffix.
package enum CoverFiles {
    static let names = ["cover", "folder", "front"]
    static let suffixes: Set<String> = ["jpg", "jpeg", "png", "webp", "tiff", "bmp", "gif"]

    /// The path of the cover image in `directory`; nil when there is none.
    package static func find(in directory: String) -> String? {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        var best: (rank: Int, name: String)?
        for file in files {
            let dot = file.lastIndex(of: ".") ?? file.endIndex
            guard dot != file.endIndex, suffixes.contains(file[file.index(after: dot)...].lowercased()),
                let rank = names.firstIndex(of: file[..<dot].lowercased())
            else { continue }
            // Among equals (cover.jpg, Cover.png), the first by name, so the answer is stable.
            if best.map({ rank < $0.rank || (rank == $0.rank && file < $0.name) }) ?? true { best = (rank, file) }
        }
        guard let best else { return nil }
        var info = stat()
        let path = directory + "/" + best.name
        guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        return path
    }
}
