import Foundation
import Testing

@testable import TonearmLibrary

/// The scan folds every tag value for search: ASCII by hand, the rest by Foundation, alike.
@Suite("Folding a value for search")
struct LibraryFoldingTests {
    @Test func asciiIsFoldedAsFoundationFoldsIt() {
        let every = String(decoding: (1..<128).map { UInt8($0) }, as: UTF8.self)
        #expect(LibraryFolding.fold(every) == every.folding(options: [.caseInsensitive], locale: nil))
        for text in ["", "Night Train", "AC/DC", "already lower", "MiXeD 123 !@#"] {
            #expect(LibraryFolding.fold(text) == text.folding(options: [.caseInsensitive], locale: nil), "\(text)")
        }
    }

    @Test func otherTextIsFoldedByFoundation() {
        for text in ["CAFÉ", "Straße", "ÜBER señor", "ØRE", "İstanbul", "ΣΊΣΥΦΟΣ", "日本語"] {
            #expect(LibraryFolding.fold(text) == text.folding(options: [.caseInsensitive], locale: nil), "\(text)")
        }
        #expect(LibraryFolding.fold("CAFÉ") == LibraryFolding.fold("café"))
    }
}
