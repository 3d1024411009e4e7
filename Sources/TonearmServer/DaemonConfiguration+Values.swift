import Foundation
import TOMLKit
import TonearmFrontEnd

// The config's value parsers: each turns a TOML value into a setting or says, naming the key
// and where it came from, why it cannot.

func zeroMeansSource(_ value: Int) -> Int? { value == 0 ? nil : value }

/// An array of ids, each a number or a name (`resolve` turns a name into the id).
func ids(
    _ value: any TOMLValueConvertible, _ key: String, _ source: String,
    _ resolve: (String, String, String) throws -> UInt32
) throws -> [UInt32] {
    guard let array = value.array else { throw DaemonConfiguration.Invalid("\(source): \(key) must be an array") }
    return try array.map { element in
        if let number = element.int, (0...Int(UInt32.max - 1)).contains(number) { return UInt32(number) }
        if let name = element.string { return try resolve(name, key, source) }
        throw DaemonConfiguration.Invalid("\(source): \(key) must hold ids or names")
    }
}

extension DaemonConfiguration {
    static func groupID(_ text: String, _ key: String, _ source: String) throws -> UInt32 {
        if let number = UInt32(text) { return number }
        guard let entry = getgrnam(text) else { throw Invalid("\(source): \(key): no group '\(text)'") }
        return entry.pointee.gr_gid
    }

    static func userID(_ text: String, _ key: String, _ source: String) throws -> UInt32 {
        if let number = UInt32(text) { return number }
        guard let entry = getpwnam(text) else { throw Invalid("\(source): \(key): no user '\(text)'") }
        return entry.pointee.pw_uid
    }
}

/// An absolute music directory, or "" (nil) for the first of `input.roots`.
func musicDirectory(_ value: any TOMLValueConvertible, _ key: String, _ source: String) throws -> String? {
    let path = try string(value, key, source)
    guard path.isEmpty || path.hasPrefix("/") else {
        throw DaemonConfiguration.Invalid("\(source): \(key) must be an absolute path, or \"\" for the first of input.roots")
    }
    return path.isEmpty ? nil : path
}

func string(_ value: any TOMLValueConvertible, _ key: String, _ source: String) throws -> String {
    guard let text = value.string else { throw DaemonConfiguration.Invalid("\(source): \(key) must be a string") }
    return text
}

/// `max_output_buffer_size` (KiB, as MPD's) or `connection_timeout` (seconds; 0: never).
func clientLimit(
    _ key: String, _ value: any TOMLValueConvertible, _ section: String, _ source: String,
    _ limits: inout ClientLimits
) throws {
    if key == "max_output_buffer_size" {
        limits.maxOutputBytes = try integer(value, "\(section).\(key)", source, 64...4_194_304) * 1024
    } else {
        let seconds = try integer(value, "\(section).\(key)", source, 0...86_400)
        limits.idleTimeout = seconds == 0 ? nil : .seconds(Int64(seconds))
    }
}

func integer(_ value: any TOMLValueConvertible, _ key: String, _ source: String, _ range: ClosedRange<Int>) throws -> Int {
    guard let number = value.int, range.contains(number) else {
        throw DaemonConfiguration.Invalid("\(source): \(key) must be a whole number from \(range.lowerBound) to \(range.upperBound)")
    }
    return number
}

func number(_ value: any TOMLValueConvertible, _ key: String, _ source: String) throws -> Double {
    if let number = value.double { return number }
    if let number = value.int { return Double(number) }
    throw DaemonConfiguration.Invalid("\(source): \(key) must be a number")
}

/// A command as an argv array of strings (no shell); [] for none.
func command(_ value: any TOMLValueConvertible, _ key: String, _ source: String) throws -> [String] {
    guard let array = value.array else {
        throw DaemonConfiguration.Invalid("\(source): \(key) must be an array of strings, e.g. [\"/usr/local/bin/amp\", \"on\"]")
    }
    let words = try array.map { element in
        guard let word = element.string else { throw DaemonConfiguration.Invalid("\(source): \(key) must hold only strings") }
        return word
    }
    if let program = words.first, program.isEmpty {
        throw DaemonConfiguration.Invalid("\(source): \(key): the program name is empty")
    }
    return words
}

func bool(_ value: any TOMLValueConvertible, _ key: String, _ source: String) throws -> Bool {
    guard let flag = value.bool else { throw DaemonConfiguration.Invalid("\(source): \(key) must be true or false") }
    return flag
}

extension DaemonConfiguration {
    /// A warning when the config file at `path` sets a password (`http.password`,
    /// `http.read_password`, `mpd.password`) and users other than its owner and group may read
    /// it; nil otherwise. The package installs it 0640 root:tonearm.
    package static func passwordExposure(configFile path: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0, info.st_mode & S_IROTH != 0,
            let file = try? DaemonConfiguration().applying(tomlFile: path)
        else { return nil }
        let keys = [
            (file.http.password, "http.password"), (file.http.readPassword, "http.read_password"),
            (file.mpd.password, "mpd.password"),
        ].compactMap { $0.0 == nil ? nil : $0.1 }
        guard !keys.isEmpty else { return nil }
        let mode = String(info.st_mode & 0o777, radix: 8)
        return "\(path) holds \(keys.joined(separator: ", ")) and every user may read it (mode \(mode)): "
            + "chmod o-r it (the package installs it 0640 root:tonearm)"
    }
}
