/// An MPD error: `ACK [code@index] {command} message` on the wire.
struct MPDError: Error, Sendable, Equatable {
    /// MPD's `enum ack` (src/protocol/Ack.hxx).
    enum Code: Int, Sendable {
        case notList = 1
        case argument = 2
        case password = 3
        case permission = 4
        case unknown = 5
        case noExist = 50
        case playlistMax = 51
        case system = 52
        case playlistLoad = 53
        case updateAlready = 54
        case playerSync = 55
        case exist = 56
    }

    let code: Code
    let message: String
    /// After this error the connection is closed (a client that does not speak the protocol).
    var closesConnection = false

    init(_ code: Code, _ message: String, closesConnection: Bool = false) {
        self.code = code
        self.message = message
        self.closesConnection = closesConnection
    }

    static func argument(_ message: String) -> MPDError { MPDError(.argument, message) }
}
