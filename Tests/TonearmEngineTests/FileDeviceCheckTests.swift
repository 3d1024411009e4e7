import Foundation
import Testing
import TonearmTestSupport

@testable import TonearmEngine

@Suite("A file: device's path and what is wrong with it")
struct FileDeviceCheckTests {
    @Test(arguments: [
        ("file:'/tmp/a b/out.raw',raw", "/tmp/a b/out.raw"),
        ("file:\"/tmp/out.raw\"", "/tmp/out.raw"),
        ("file:/tmp/out.raw,raw", "/tmp/out.raw"),
        ("FILE:'/tmp/out.raw'", "/tmp/out.raw"),
    ])
    func pathIsFound(device: String, path: String) {
        #expect(FileDeviceCheck.path(inDevice: device) == path)
    }

    @Test(arguments: ["null", "hw:0,0", "file:'|cat >> /tmp/x',raw", "file:", "file:'unclosed"])
    func otherDevicesHaveNoPath(device: String) {
        #expect(FileDeviceCheck.path(inDevice: device) == nil)
    }

    @Test func problemsAreNamed() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        #expect(FileDeviceCheck.problem(device: "file:'\(dir.path("out.raw"))',raw") == nil, "a new file in a writable directory")
        let missing = dir.path("missing/out.raw")
        #expect(FileDeviceCheck.problem(device: "file:'\(missing)',raw") == "cannot create \(missing): No such file or directory")
        #expect(FileDeviceCheck.problem(device: "null") == nil)
    }
}
