import ArgumentParser

/// A number as written on the command line. Only plain decimals are accepted: an optional sign,
/// digits, an optional fraction ("30", "+10", "-2.5", ".5"). `Double(String)` would also take
/// "nan", "inf", "1e400" (infinity) and "0x10" (16); none of those is what a user means by a
/// position, an id or a volume, so every numeric argument goes through here.
struct NumberArgument: Sendable, Equatable {
    /// Why a command-line value is refused; ArgumentParser prints the description after
    /// "The value 'x' is invalid for '<name>': ".
    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    let value: Double
    /// Written with a leading + or -: relative, for `seek` and `volume`.
    let isSigned: Bool
    /// The exact value when it is a whole number that fits an Int ("3" and "3.00"), else nil.
    let integer: Int?

    init(_ text: String) throws(Failure) {
        var rest = Substring(text)
        var negative = false
        isSigned = rest.first == "+" || rest.first == "-"
        if isSigned { negative = rest.removeFirst() == "-" }
        let parts = rest.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        let whole = parts[0]
        let fraction = parts.count > 1 ? parts[1] : ""
        let isDecimal =
            !(whole.isEmpty && fraction.isEmpty)
            && whole.allSatisfy(\.isASCIIDigit) && fraction.allSatisfy(\.isASCIIDigit)
        guard isDecimal else {
            if let value = Double(text), !value.isFinite { throw Failure("not a finite number") }
            if Double(text) != nil { throw Failure("not a plain decimal number (write digits, like 16 or 2.5)") }
            throw Failure("not a number")
        }
        guard let value = Double(text), value.isFinite else { throw Failure("not a finite number") }
        self.value = value
        if fraction.allSatisfy({ $0 == "0" }), let magnitude = Int(whole.isEmpty ? "0" : whole) {
            integer = negative ? -magnitude : magnitude
        } else {
            integer = nil
        }
    }

    // Parsers for `@Argument(transform:)` / `@Option(transform:)`.

    /// Seconds, absolute or (signed) relative.
    static func seconds(_ text: String) throws -> NumberArgument { try NumberArgument(text) }

    /// Seconds, not negative.
    static func nonNegativeSeconds(_ text: String) throws -> Double {
        let number = try NumberArgument(text)
        guard number.value >= 0 else { throw Failure("must not be negative") }
        return number.value
    }

    /// Any finite number (decibels, intervals).
    static func finite(_ text: String) throws -> Double { try NumberArgument(text).value }

    /// A queue item id or position: a whole number ≥ 0.
    static func index(_ text: String) throws -> Int {
        guard let integer = try NumberArgument(text).integer, integer >= 0 else {
            throw Failure("must be a whole number ≥ 0")
        }
        return integer
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
