import Foundation
import Testing
import TonearmTestSupport

@testable import TonearmLibrary

@Suite("Cover files are found beside the songs")
struct CoverFilesTests {
    /// Which file of a directory is its cover, for each mix of names.
    @Test(
        arguments: [
            (["01.flac"], nil),
            (["01.flac", "cover.txt", "covers.jpg"], nil),
            (["front.png", "Folder.JPG", "01.flac"], "Folder.JPG"),
            (["front.png", "01.flac"], "front.png"),
            (["folder.jpg", "cover.webp"], "cover.webp"),
            (["Cover.png", "cover.jpg"], "Cover.png"),
            (["cover.jpeg", "cover.bmp", "cover.gif", "cover.tiff"], "cover.bmp"),
        ] as [([String], String?)])
    func theCoverIs(_ files: [String], _ expected: String?) throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        for file in files { FileManager.default.createFile(atPath: dir.path(file), contents: Data([1])) }
        #expect(CoverFiles.find(in: dir.url.path) == expected.map { dir.url.path + "/" + $0 })
    }

    @Test func aDirectoryNamedLikeACoverIsNotOne() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        try FileManager.default.createDirectory(atPath: dir.path("cover.jpg"), withIntermediateDirectories: true)
        #expect(CoverFiles.find(in: dir.url.path) == nil)
    }
}
