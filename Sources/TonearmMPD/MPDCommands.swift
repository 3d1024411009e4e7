/// Every command of the MPD front-end, by name (docs/mpd.md lists them and what differs from MPD).
/// The connection handler itself runs those that concern the connection: `idle`, `noidle`,
/// `close`, `password`, `commands`, `notcommands` and the command lists.
enum MPDCommands {
    static let table: [String: MPDCommand] = {
        var table: [String: MPDCommand] = [:]
        for command in statusCommands + playbackCommands + queueCommands + libraryCommands + playlistCommands + artCommands {
            precondition(table[command.name] == nil, "MPD command \(command.name) defined twice")
            table[command.name] = command
        }
        return table
    }()

    /// Commands the connection handler runs, with the permission each needs.
    static let connectionCommands: [(name: String, permission: MPDPermission)] = [
        ("close", .none), ("commands", .none), ("notcommands", .none), ("password", .none),
        ("idle", .read), ("tagtypes", .none), ("binarylimit", .none),
    ]

    /// Names a client with `permission` may or may not use, sorted (`commands`, `notcommands`).
    static func names(allowed: Bool, for permission: MPDPermission) -> [String] {
        let all = table.values.map { ($0.name, $0.permission) } + connectionCommands.map { ($0.name, $0.permission) }
        return all.filter { (permission >= $0.1) == allowed }.map(\.0).sorted()
    }
}
