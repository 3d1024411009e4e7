import TonearmProtocol

/// The home speaker's: announcements, the sleep timer, alarms (bodies in RequestRouter+Home).
extension RPCMethods {
    static let home: [RPCMethod] = [
        RPCMethod("announce", .control, ["url", "volume", "duck"], .now { call in try call.router.announceAnswer(call.params) }),
        RPCMethod(
            "sleep", .control, ["after_s", "fade_s", "at_end_of", "cancel"],
            .now { call in
                try call.router.sleepAnswer(call.params)
            }),
        // Later: answered once the alarms file is on disk.
        RPCMethod(
            "alarms.add", .control, ["time", "days", "url", "queue", "volume", "fade_in_s"],
            .later { call in
                try await call.router.alarmAdd(call.params)
            }),
        RPCMethod(
            "alarms.list", .read, [],
            .now { call in
                ["alarms": .array(call.player.alarms.alarms.map(ProtocolEncoding.alarm))]
            }),
        RPCMethod("alarms.remove", .control, ["id"], .later { call in try await call.router.alarmRemove(call.params) }),
    ]
}
