import Glibc

/// ALSA's `file:` plugin opens its output file lazily and, when it cannot, fails its writes
/// with a bare "Input/output error" and no word of why. This says why, from the path in the
/// device name (`file:'/x/out.raw',raw`, `file:"/x/out.raw"`, `file:/x/out.raw`): a missing
/// or unwritable directory or file. A pipe (`file:'|cmd'`) or any other device: nil.
enum FileDeviceCheck {
    static func path(inDevice device: String) -> String? {
        guard device.lowercased().hasPrefix("file:") else { return nil }
        var rest = Substring(device.dropFirst(5))
        let path: Substring
        if let quote = rest.first, quote == "'" || quote == "\"" {
            rest = rest.dropFirst()
            guard let end = rest.firstIndex(of: quote) else { return nil }
            path = rest[..<end]
        } else {
            path = rest.prefix { $0 != "," }
        }
        guard !path.isEmpty, !path.hasPrefix("|") else { return nil }
        return String(path)
    }

    /// Why the device's file cannot be written, if it cannot.
    static func problem(device: String) -> String? {
        guard let path = path(inDevice: device) else { return nil }
        if access(path, F_OK) == 0 {
            return access(path, W_OK) == 0 ? nil : "cannot write \(path): \(String(cString: strerror(errno)))"
        }
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        guard access(directory, W_OK) != 0 else { return nil }
        return "cannot create \(path): \(String(cString: strerror(errno)))"
    }
}
