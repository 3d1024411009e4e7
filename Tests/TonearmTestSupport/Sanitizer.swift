import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Which sanitizer this test run was built with (`swift test --sanitize=…`), if any. The daemon
/// binary the tests start comes from the same build, so it carries the same one.
package enum Sanitizer {
    package static let active: String? = {
        let program = dlopen(nil, RTLD_NOW)
        if dlsym(program, "__tsan_init") != nil { return "thread" }
        if dlsym(program, "__asan_init") != nil { return "address" }
        return nil
    }()

    /// How much longer a latency bound may be in this build. A sanitizer checks every memory access
    /// and slows the daemon several times over; a bound meant for a real build (an answer within
    /// 0.1 s) would then fail on timing alone. Bounds that say "before X happens" keep their meaning
    /// only while the scaled bound stays below X, so tests that use this keep that true.
    package static var timeScale: Double { active == nil ? 1 : 4 }

    /// What a sanitizer printed in a process's output: its reports start with these lines.
    package static func reports(in log: String) -> [String] {
        let markers = ["WARNING: ThreadSanitizer", "ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:"]
        let lines = log.split(separator: "\n", omittingEmptySubsequences: false)
        return lines.indices.filter { index in markers.contains { lines[index].contains($0) } }.map { index in
            lines[index..<min(lines.count, index + 12)].joined(separator: "\n")
        }
    }
}
