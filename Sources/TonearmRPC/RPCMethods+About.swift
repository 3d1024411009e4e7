import NIOCore
import TonearmPlayer
import TonearmProtocol

/// The daemon and this client: status, events, liveness, versions.
extension RPCMethods {
    static let about: [RPCMethod] = [
        RPCMethod(
            "status", .read, [],
            .now { call in
                .encoded(
                    call.router.statusEncoding.bytes(for: call.player.status) { status in
                        var bytes = ByteBuffer()
                        JSONCoding.serialize(ProtocolEncoding.status(status), into: &bytes)
                        return bytes
                    })
            }),
        RPCMethod(
            "subscribe", .read, ["events", "position_interval"],
            .now { call in
                let kinds = try call.params.stringArray("events") ?? ["transition", "performance"]
                var subscription = Set<ClientSession.EventKind>()
                for kind in kinds {
                    guard let parsed = ClientSession.EventKind(rawValue: kind) else {
                        throw RPC.Failure(
                            .invalidParams,
                            "invalid params: unknown event type '\(kind)' (transition, performance, position, queue, item, library)")
                    }
                    subscription.insert(parsed)
                }
                let interval = try call.params.number("position_interval") ?? 1.0
                guard interval >= 0.05, interval <= 3600 else {
                    throw RPC.Failure(.invalidParams, "invalid params: position_interval must be from 0.05 to 3600 seconds")
                }
                call.session.subscribe(to: subscription, positionInterval: interval)
                return [
                    "subscribed": .array(subscription.map(\.rawValue).sorted().map(JSONValue.string)),
                    "state": ProtocolEncoding.state(call.player.state),
                ]
            }),
        RPCMethod("ping", .read, [], .now { _ in "pong" }),
        RPCMethod(
            "version", .read, [],
            .now { _ in
                ["version": .string(RequestRouter.version), "libraries": .object(Player.libraryVersions.mapValues(JSONValue.string))]
            }),
    ]
}
