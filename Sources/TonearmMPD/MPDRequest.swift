/// One MPD command line, split into the command's name and its arguments by MPD 0.23's rules
/// (src/util/Tokenizer.cxx, src/client/Process.cxx): the name is a word of letters, digits and
/// `_` starting with a lowercase letter; an argument is either a run of bytes above 0x20 other
/// than `"` and `'`, or a `"`-quoted string in which `\` escapes the next byte; any byte up to
/// 0x20 separates. Written by hand: no library speaks
/// MPD's quoting, and it must run per request without building intermediate strings.
struct MPDRequest: Sendable, Equatable {
    let name: String
    let arguments: [String]

    /// MPD's own limit on arguments per command (COMMAND_ARGV_MAX is 64, and reaching it is
    /// already an error).
    static let maxArguments = 63

    init(name: String, arguments: [String]) {
        self.name = name
        self.arguments = arguments
    }

    /// Whether a line can be a command at all: MPD closes the connection, without a word, on a
    /// line that does not start with a lowercase letter (binary garbage, an empty line).
    static func startsLikeCommand(_ line: UnsafeRawBufferPointer) -> Bool {
        guard let first = line.first else { return false }
        return (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(first)
    }

    /// Parses one line (without its newline). A bad character in the command's name fails with
    /// `closesConnection` set: MPD hangs up on a client that does not speak the protocol.
    static func parse(_ line: UnsafeRawBufferPointer) -> Result<MPDRequest, MPDError> {
        var index = 0
        var count = line.count
        func isSpace(_ byte: UInt8) -> Bool { byte <= 0x20 }
        // Trailing whitespace (a \r) is not part of the line.
        while count > 0, isSpace(line[count - 1]) { count -= 1 }
        guard index < count, isLetter(line[index]) else {
            return .failure(MPDError(.unknown, "Letter expected", closesConnection: true))
        }

        // The command name.
        let nameStart = index
        while index < count, !isSpace(line[index]) {
            guard isWordCharacter(line[index]) else {
                return .failure(MPDError(.unknown, "Invalid word character", closesConnection: true))
            }
            index += 1
        }
        let name = String(decoding: UnsafeRawBufferPointer(rebasing: line[nameStart..<index]), as: UTF8.self)

        // The arguments.
        var arguments: [String] = []
        while true {
            while index < count, isSpace(line[index]) { index += 1 }
            guard arguments.count <= maxArguments else { return .failure(.argument("Too many arguments")) }
            guard index < count else { break }
            if line[index] == UInt8(ascii: "\"") {
                index += 1
                var bytes: [UInt8] = []
                var closed = false
                while index < count {
                    var byte = line[index]
                    if byte == UInt8(ascii: "\"") {
                        closed = true
                        index += 1
                        break
                    }
                    if byte == UInt8(ascii: "\\") {
                        index += 1
                        guard index < count else { break }
                        byte = line[index]
                    }
                    bytes.append(byte)
                    index += 1
                }
                guard closed else { return .failure(MPDError(.unknown, "Missing closing '\"'")) }
                guard index == count || isSpace(line[index]) else {
                    return .failure(MPDError(.unknown, "Space expected after closing '\"'"))
                }
                arguments.append(String(decoding: bytes, as: UTF8.self))
            } else {
                let start = index
                while index < count, !isSpace(line[index]) {
                    let byte = line[index]
                    guard byte > 0x20, byte != UInt8(ascii: "\""), byte != UInt8(ascii: "'") else {
                        return .failure(MPDError(.unknown, "Invalid unquoted character"))
                    }
                    index += 1
                }
                arguments.append(String(decoding: UnsafeRawBufferPointer(rebasing: line[start..<index]), as: UTF8.self))
            }
        }
        return .success(MPDRequest(name: name, arguments: arguments))
    }

    private static func isLetter(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
    }

    private static func isWordCharacter(_ byte: UInt8) -> Bool {
        isLetter(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "_")
    }
}

extension MPDRequest {
    /// `"text"` with `"` and `\` escaped, as MPD clients quote an argument.
    static func quote(_ text: String) -> String {
        var quoted = "\""
        for character in text {
            if character == "\"" || character == "\\" { quoted.append("\\") }
            quoted.append(character)
        }
        quoted.append("\"")
        return quoted
    }
}
