import TOMLKit
import TonearmFrontEnd
import TonearmWeb

extension DaemonConfiguration {
    /// `[http]`: the web remote.
    mutating func applyHTTP(_ value: any TOMLValueConvertible, _ source: String) throws {
        guard let http = value.table else { throw Invalid("\(source): [http] must be a table") }
        for key in http.keys {
            let value = http[key]!
            switch key {
            case "enabled": self.http.enabled = try bool(value, "http.enabled", source)
            case "bind":
                let text = try string(value, "http.bind", source)
                guard let address = TCPAddress(text) else {
                    throw Invalid("\(source): http.bind must be \"host:port\" such as \"127.0.0.1:6680\", not '\(text)'")
                }
                self.http.bind = address
            case "password":
                let text = try string(value, "http.password", source)
                self.http.password = text.isEmpty ? nil : text
            case "max_clients": self.http.maxClients = try integer(value, "http.max_clients", source, 1...65_536)
            default: throw Invalid("\(source): unknown key 'http.\(key)'")
            }
        }
    }
}
