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
            case "read_password":
                let text = try string(value, "http.read_password", source)
                self.http.readPassword = text.isEmpty ? nil : text
            case "allowed_hosts":
                guard let array = value.array else { throw Invalid("\(source): http.allowed_hosts must be an array of host names") }
                self.http.allowedHosts = try array.map { element -> String in
                    guard let name = element.string, !name.isEmpty, name.utf8.count <= 253,
                        name.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "-" || $0 == "_") })
                    else {
                        throw Invalid("\(source): http.allowed_hosts must hold host names such as \"jukebox.example.net\"")
                    }
                    return name.lowercased()
                }
            case "max_clients": self.http.maxClients = try integer(value, "http.max_clients", source, 1...65_536)
            default: throw Invalid("\(source): unknown key 'http.\(key)'")
            }
        }
    }
}
