/// Every command of the MPD front-end, by name (docs/mpd.md lists them and what differs from MPD).
/// The session reads the command lists (`command_list_begin`, …) and `noidle` itself: they
/// frame other commands.
enum MPDCommands {
    static let table: [String: MPDCommand] = {
        var table: [String: MPDCommand] = [:]
        for command in connectionCommands + statusCommands + playbackCommands + queueCommands + libraryCommands
            + playlistCommands + artCommands
        {
            precondition(table[command.name] == nil, "MPD command \(command.name) defined twice")
            table[command.name] = command
        }
        return table
    }()

    /// The commands about the connection itself: what they change is the session's.
    static let connectionCommands: [MPDCommand] = [
        MPDCommand("close", .none, 0...Int.max, .connection { _, _, _ in .close }),
        MPDCommand(
            "commands", .none, 0...0,
            .connection { session, _, response in
                session.listCommands(allowed: true, into: &response)
                return .done
            }),
        MPDCommand(
            "notcommands", .none, 0...0,
            .connection { session, _, response in
                session.listCommands(allowed: false, into: &response)
                return .done
            }),
        MPDCommand(
            "password", .none, 1...1,
            .connection { session, request, _ throws(MPDError) in
                try session.logIn(request.arguments[0])
                return .done
            }),
        MPDCommand(
            "tagtypes", .none, 0...Int.max,
            .connection { session, request, response throws(MPDError) in
                try session.tagTypes(request.arguments, response: &response)
                return .done
            }),
        MPDCommand(
            "binarylimit", .none, 1...1,
            .connection { session, request, _ throws(MPDError) in
                try session.setBinaryLimit(request.arguments[0])
                return .done
            }),
        // Inside a command list it ends the list there, as in MPD 0.23.
        MPDCommand(
            "idle", .read, 0...Int.max,
            .connection { session, request, response throws(MPDError) in
                try session.beginIdle(request.arguments, into: &response)
                return .idle
            }),
    ]

    /// Names a client with `permission` may or may not use, sorted (`commands`, `notcommands`).
    static func names(allowed: Bool, for permission: MPDPermission) -> [String] {
        table.values.filter { (permission >= $0.permission) == allowed }.map(\.name).sorted()
    }
}
