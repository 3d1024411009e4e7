import TOMLKit
import TonearmFrontEnd

/// One key of the config file, declared once (`ConfigSchema`): its TOML name, the environment
/// variable and the flag that also set it (if any), and how a value is checked and applied.
/// The type and range live in the check; the default and the doc line are the documented
/// config/tonearmd.toml's, which a test holds to the same keys.
struct ConfigKey: Sendable {
    typealias Apply = @Sendable (inout DaemonConfiguration, any TOMLValueConvertible, _ source: String) throws -> Void

    /// "section.key", or "key" at the top.
    let name: String
    let environment: String?
    let flag: String?
    let apply: Apply

    init(_ name: String, environment: String? = nil, flag: String? = nil, apply: @escaping Apply) {
        self.name = name
        self.environment = environment
        self.flag = flag
        self.apply = apply
    }

    /// true or false.
    static func bool(
        _ name: String, environment: String? = nil, flag: String? = nil, _ path: WritableKeyPath<DaemonConfiguration, Bool> & Sendable
    ) -> ConfigKey {
        ConfigKey(name, environment: environment, flag: flag) { config, value, source in
            config[keyPath: path] = try TonearmServer.bool(value, name, source)
        }
    }

    /// A whole number in `range`.
    static func integer(
        _ name: String, _ range: ClosedRange<Int>, environment: String? = nil, flag: String? = nil,
        _ path: WritableKeyPath<DaemonConfiguration, Int> & Sendable
    ) -> ConfigKey {
        ConfigKey(name, environment: environment, flag: flag) { config, value, source in
            config[keyPath: path] = try TonearmServer.integer(value, name, source, range)
        }
    }

    /// A command as an argv array of strings (no shell); [] for none.
    static func command(_ name: String, _ path: WritableKeyPath<DaemonConfiguration, [String]> & Sendable) -> ConfigKey {
        ConfigKey(name) { config, value, source in config[keyPath: path] = try TonearmServer.command(value, name, source) }
    }

    /// A string that is an enumeration's raw value; `choices` says which, in the error.
    static func choice<Value: RawRepresentable>(
        _ name: String, _ choices: String, _ path: WritableKeyPath<DaemonConfiguration, Value> & Sendable
    ) -> ConfigKey where Value.RawValue == String {
        ConfigKey(name) { config, value, source in
            let text = try TonearmServer.string(value, name, source)
            guard let chosen = Value(rawValue: text) else {
                throw DaemonConfiguration.Invalid("\(source): \(name) must be \(choices), not '\(text)'")
            }
            config[keyPath: path] = chosen
        }
    }

    /// `max_output_buffer_size` (KiB, as MPD's) or `connection_timeout` (seconds; 0: never) of a
    /// front-end's client limits.
    static func clientLimit(_ name: String, _ path: WritableKeyPath<DaemonConfiguration, ClientLimits> & Sendable) -> ConfigKey {
        let parts = name.split(separator: ".")
        return ConfigKey(name) { config, value, source in
            try TonearmServer.clientLimit(String(parts[1]), value, String(parts[0]), source, &config[keyPath: path])
        }
    }
}
