import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Which sanitizer this test run was built with (`swift test --sanitize=…`), if any. The daemon
/// binary the tests start comes from the same build, so it carries the same one.
public enum Sanitizer {
    public static let active: String? = {
        let program = dlopen(nil, RTLD_NOW)
        if dlsym(program, "__tsan_init") != nil { return "thread" }
        if dlsym(program, "__asan_init") != nil { return "address" }
        return nil
    }()

    /// What a sanitizer printed in a process's output: its reports start with these lines.
    public static func reports(in log: String) -> [String] {
        let markers = ["WARNING: ThreadSanitizer", "ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:"]
        let lines = log.split(separator: "\n", omittingEmptySubsequences: false)
        return lines.indices.filter { index in markers.contains { lines[index].contains($0) } }.map { index in
            lines[index..<min(lines.count, index + 12)].joined(separator: "\n")
        }
    }
}
