import TonearmProtocol

/// Typed, strict access to a request's params object.
struct Params: Sendable {
    let object: [String: JSONValue]
    let method: String

    init(_ value: JSONValue, method: String) {
        if case .object(let object) = value { self.object = object } else { self.object = [:] }
        self.method = method
    }

    func allow(_ keys: Set<String>) throws {
        if let unknown = object.keys.sorted().first(where: { !keys.contains($0) }) {
            throw RPC.Failure(.invalidParams, "invalid params: '\(method)' has no parameter '\(unknown)'")
        }
    }

    func requiredString(_ key: String) throws -> String {
        guard let value = object[key] else { throw RPC.Failure(.invalidParams, "invalid params: '\(key)' is required") }
        guard case .string(let text) = value, !text.isEmpty else {
            throw RPC.Failure(.invalidParams, "invalid params: '\(key)' must be a non-empty string")
        }
        return text
    }

    func requiredNumber(_ key: String, bounded: Bool = true) throws -> Double {
        guard let value = try number(key, bounded: bounded) else {
            throw RPC.Failure(.invalidParams, "invalid params: '\(key)' is required")
        }
        return value
    }

    /// A finite number; `bounded`: also under 1e9 in magnitude.
    func number(_ key: String, unit: String = "seconds", bounded: Bool = true) throws -> Double? {
        guard let value = object[key], value != .null else { return nil }
        guard case .number(let number) = value, number.isFinite, !bounded || abs(number) < 1e9 else {
            throw RPC.Failure(.invalidParams, "invalid params: '\(key)' must be a number of \(unit)")
        }
        return number
    }

    func string(_ key: String) throws -> String? {
        guard let value = object[key], value != .null else { return nil }
        guard case .string(let text) = value else { throw RPC.Failure(.invalidParams, "invalid params: '\(key)' must be a string") }
        return text
    }

    func integer(_ key: String) throws -> Int? {
        guard let value = object[key], value != .null else { return nil }
        guard case .number(let number) = value, number.isFinite, number.rounded() == number, abs(number) < 1e9 else {
            throw RPC.Failure(.invalidParams, "invalid params: '\(key)' must be a whole number")
        }
        return Int(number)
    }

    func requiredInteger(_ key: String) throws -> Int {
        guard let value = try integer(key) else { throw RPC.Failure(.invalidParams, "invalid params: '\(key)' is required") }
        return value
    }

    func requiredIntegerArray(_ key: String) throws -> [Int] {
        guard let value = object[key] else { throw RPC.Failure(.invalidParams, "invalid params: '\(key)' is required") }
        guard case .array(let items) = value else {
            throw RPC.Failure(.invalidParams, "invalid params: '\(key)' must be an array of whole numbers")
        }
        return try items.map { item in
            guard case .number(let number) = item, number.isFinite, number.rounded() == number, abs(number) < 1e9 else {
                throw RPC.Failure(.invalidParams, "invalid params: '\(key)' must be an array of whole numbers")
            }
            return Int(number)
        }
    }

    func bool(_ key: String) throws -> Bool? {
        guard let value = object[key], value != .null else { return nil }
        guard case .bool(let flag) = value else { throw RPC.Failure(.invalidParams, "invalid params: '\(key)' must be true or false") }
        return flag
    }

    func stringArray(_ key: String) throws -> [String]? {
        guard let value = object[key], value != .null else { return nil }
        guard case .array(let items) = value else {
            throw RPC.Failure(.invalidParams, "invalid params: '\(key)' must be an array of strings")
        }
        return try items.map { item in
            guard case .string(let text) = item else {
                throw RPC.Failure(.invalidParams, "invalid params: '\(key)' must be an array of strings")
            }
            return text
        }
    }
}
