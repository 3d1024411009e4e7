import Foundation
import NIOCore
import NIOPosix

/// A client for the control socket (used by tonearmctl): sends requests and reads answers in
/// order, handing notifications that arrive in between to `onNotification`.
package struct ControlClient: Sendable {
    package struct ResponseError: Error, CustomStringConvertible, Sendable {
        package let code: Int
        package let message: String
        package let data: JSONValue?
        package var description: String { message }
    }

    /// The daemon could not be reached, or closed the connection, in words.
    package struct ConnectionError: Error, CustomStringConvertible, Sendable {
        package let description: String
        init(_ description: String) { self.description = description }
    }

    package let socketPath: String

    package init(socketPath: String) { self.socketPath = socketPath }

    package final class Connection {
        // Used by the one task running the body passed to `withConnection`.
        private var inbound: NIOAsyncChannelInboundStream<InboundLine>.AsyncIterator
        private let outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>
        private var nextID = 0

        init(inbound: NIOAsyncChannelInboundStream<InboundLine>, outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>) {
            self.inbound = inbound.makeAsyncIterator()
            self.outbound = outbound
        }

        /// Sends one request and returns its result, or throws its error.
        package func call(
            _ method: String, _ params: JSONValue = [:],
            onNotification: (JSONValue) -> Void = { _ in }
        ) async throws -> JSONValue {
            nextID += 1
            let id = JSONValue.number(Double(nextID))
            var data = JSONValue.object(["jsonrpc": "2.0", "id": id, "method": .string(method), "params": params]).serialized()
            data.append(UInt8(ascii: "\n"))
            do {
                try await outbound.write(ByteBuffer(bytes: data))
            } catch {
                // A daemon that refused the connection (too many clients, not allowed) said why
                // before closing it: that is the answer, not the failed write.
                if let message = try? await nextMessage(), let refusal = Self.responseError(message) { throw refusal }
                throw error
            }
            while let message = try await nextMessage() {
                if message["method"] != nil, message["id"] == nil {
                    onNotification(message)
                    continue
                }
                if let error = Self.responseError(message) { throw error }
                return message["result"] ?? .null
            }
            throw ConnectionError("the daemon closed the connection")
        }

        private static func responseError(_ message: JSONValue) -> ResponseError? {
            guard let error = message["error"] else { return nil }
            return ResponseError(
                code: Int(error["code"]?.doubleValue ?? 0),
                message: error["message"]?.stringValue ?? "unknown error", data: error["data"])
        }

        /// The next message from the daemon (answer or notification), or nil when it closed.
        package func nextMessage() async throws -> JSONValue? {
            while let item = try await inbound.next() {
                guard case .line(let buffer) = item else { continue }
                return try JSONValue.parse(Data(buffer.readableBytesView))
            }
            return nil
        }
    }

    package func withConnection<T: Sendable>(_ body: @Sendable (Connection) async throws -> T) async throws -> T {
        let group = MultiThreadedEventLoopGroup.singleton
        let channel: NIOAsyncChannel<InboundLine, ByteBuffer>
        do {
            channel = try await ClientBootstrap(group: group)
                .connect(unixDomainSocketPath: socketPath) { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(LineDecoder(maxLength: 16 << 20)))
                        return try NIOAsyncChannel<InboundLine, ByteBuffer>(wrappingChannelSynchronously: channel)
                    }
                }
        } catch {
            throw ConnectionError(
                "cannot connect to tonearmd at \(socketPath): \(error) — is the daemon running? (--socket, TONEARM_SOCKET)")
        }
        return try await channel.executeThenClose { inbound, outbound in
            try await body(Connection(inbound: inbound, outbound: outbound))
        }
    }
}
