import Foundation
import Logging
import NIOCore
import NIOPosix
import TonearmSync

/// GENA eventing: subscriptions (SUBSCRIBE, renewal, UNSUBSCRIBE) and their NOTIFYs.
///
/// Each subscriber gets at most one NOTIFY in flight and at most one every 200 ms (5 a second);
/// changes in between are folded into the next one, which says what changed since the last it
/// got. A NOTIFY that fails (no connection in 2 s, no answer 3 s after it, an error status) counts
/// against its subscriber, and two in a row drop it: a control point that stopped answering
/// costs nothing and is never waited on. Subscriptions are capped; an expired one is dropped
/// when next looked at (no timer runs for it).
final class EventHub: Sendable {
    struct Callback: Sendable, Equatable {
        var host: String
        var port: Int
        var path: String
    }

    struct Subscriber: Sendable {
        var service: RendererService
        var callback: Callback
        var expires: ContinuousClock.Instant
        var sequence: UInt32 = 0
        /// What it was last told (nil: nothing yet: the first NOTIFY says everything).
        var told: [String: String]?
        var inFlight = false
        var scheduled = false
        var lastSent: ContinuousClock.Instant?
        var failures = 0
    }

    struct State {
        var subscribers: [String: Subscriber] = [:]
        var values: [RendererService: [(String, String)]] = [:]
    }

    static let minimumTimeout = 60
    static let maximumTimeout = 1800
    static let spacing = Duration.milliseconds(200)

    private let state = Locked(State())
    private let eventLoop: any EventLoop
    private let maximum: Int
    private let logger: Logger

    init(eventLoop: any EventLoop, maximumSubscribers: Int, logger: Logger) {
        self.eventLoop = eventLoop
        maximum = maximumSubscribers
        self.logger = logger
    }

    enum Refusal: Error { case tooMany, unknown }

    /// A new subscription; returns its SID and granted timeout in seconds.
    func subscribe(_ service: RendererService, callback: Callback, timeout: Int) throws(Refusal) -> (sid: String, timeout: Int) {
        let granted = Self.granted(timeout)
        let sid = "uuid:" + UUID().uuidString.lowercased()
        let accepted = state.withLock { s in
            let now = ContinuousClock.now
            s.subscribers = s.subscribers.filter { $0.value.expires > now }
            guard s.subscribers.count < maximum else { return false }
            s.subscribers[sid] = Subscriber(service: service, callback: callback, expires: now + .seconds(granted))
            return true
        }
        guard accepted else { throw .tooMany }
        // The initial event: everything, once the SUBSCRIBE's answer is on its way.
        eventLoop.scheduleTask(in: .milliseconds(50)) { self.schedule(sid) }
        return (sid, granted)
    }

    func renew(_ sid: String, timeout: Int) throws(Refusal) -> Int {
        let granted = Self.granted(timeout)
        let found = state.withLock { s in
            guard var subscriber = s.subscribers[sid], subscriber.expires > .now else {
                s.subscribers[sid] = nil
                return false
            }
            subscriber.expires = .now + .seconds(granted)
            s.subscribers[sid] = subscriber
            return true
        }
        guard found else { throw .unknown }
        return granted
    }

    func unsubscribe(_ sid: String) throws(Refusal) {
        guard state.withLock({ $0.subscribers.removeValue(forKey: sid) }) != nil else { throw .unknown }
    }

    /// When the last live subscription runs out (nil: none).
    func latestExpiry() -> ContinuousClock.Instant? {
        state.withLock { s in
            let now = ContinuousClock.now
            return s.subscribers.values.map(\.expires).filter { $0 > now }.max()
        }
    }

    private static func granted(_ asked: Int) -> Int { min(max(asked, minimumTimeout), maximumTimeout) }

    /// The service's variables now; subscribers whose last word differs are told.
    func publish(_ service: RendererService, _ values: [(String, String)]) {
        let due: [String] = state.withLock { s in
            s.values[service] = values
            return s.subscribers.filter { $0.value.service == service }.map(\.key)
        }
        for sid in due { eventLoop.execute { self.schedule(sid) } }
    }

    /// On the event loop: sends now, or when the spacing allows, unless one is in flight (its
    /// end looks again).
    private func schedule(_ sid: String) {
        let wait: Duration? = state.withLock { s in
            guard var subscriber = s.subscribers[sid], !subscriber.inFlight, !subscriber.scheduled else { return nil }
            guard subscriber.expires > .now else {
                s.subscribers[sid] = nil
                return nil
            }
            let earliest = subscriber.lastSent.map { $0 + Self.spacing } ?? .now
            subscriber.scheduled = true
            s.subscribers[sid] = subscriber
            return max(.zero, earliest - .now)
        }
        guard let wait else { return }
        let nanoseconds = wait.components.seconds * 1_000_000_000 + wait.components.attoseconds / 1_000_000_000
        eventLoop.scheduleTask(in: .nanoseconds(nanoseconds)) { self.send(sid) }
    }

    private func send(_ sid: String) {
        let message: (Callback, ByteBuffer)? = state.withLock { s in
            guard var subscriber = s.subscribers[sid] else { return nil }
            subscriber.scheduled = false
            let values = s.values[subscriber.service] ?? []
            let changed = values.filter { subscriber.told?[$0.0] != $0.1 }
            guard !changed.isEmpty else {
                s.subscribers[sid] = subscriber
                return nil
            }
            var told = subscriber.told ?? [:]
            for (name, value) in changed { told[name] = value }
            subscriber.told = told
            subscriber.inFlight = true
            subscriber.lastSent = .now
            let sequence = subscriber.sequence
            subscriber.sequence = sequence == UInt32.max ? 1 : sequence + 1
            s.subscribers[sid] = subscriber
            let body = Self.body(subscriber.service, changed)
            var buffer = ByteBuffer()
            buffer.writeString(
                "NOTIFY \(subscriber.callback.path) HTTP/1.1\r\nHOST: \(subscriber.callback.host):\(subscriber.callback.port)\r\n"
                    + "CONTENT-TYPE: text/xml; charset=\"utf-8\"\r\nNT: upnp:event\r\nNTS: upnp:propchange\r\nSID: \(sid)\r\n"
                    + "SEQ: \(sequence)\r\nCONTENT-LENGTH: \(body.utf8.count)\r\nCONNECTION: close\r\n\r\n" + body)
            return (subscriber.callback, buffer)
        }
        guard let (callback, buffer) = message else { return }
        deliver(buffer, to: callback).whenComplete { result in
            let succeeded = (try? result.get()) == true
            let again: Bool = self.state.withLock { s in
                guard var subscriber = s.subscribers[sid] else { return false }
                subscriber.inFlight = false
                subscriber.failures = succeeded ? 0 : subscriber.failures + 1
                if subscriber.failures >= 2 {
                    s.subscribers[sid] = nil
                    return false
                }
                if !succeeded { subscriber.told = nil }
                s.subscribers[sid] = subscriber
                return true
            }
            if !succeeded {
                self.logger.notice(
                    "an event subscriber did not take a NOTIFY",
                    metadata: ["sid": "\(sid)", "callback": "\(callback.host):\(callback.port)"])
            }
            if again { self.schedule(sid) }
        }
    }

    /// One NOTIFY on a connection of its own; true when answered 2xx. Bounded: 2 s to connect,
    /// then 3 s for the answer.
    private func deliver(_ request: ByteBuffer, to callback: Callback) -> EventLoopFuture<Bool> {
        let answer = OnceAnswer(eventLoop.makePromise(of: Bool.self))
        let bootstrap = ClientBootstrap(group: eventLoop)
            .connectTimeout(.seconds(2))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(StatusLineReader(answer)) }
            }
        bootstrap.connect(host: callback.host, port: callback.port).whenComplete { result in
            switch result {
            case .failure:
                answer.give(false)
            case .success(let channel):
                let deadline = channel.eventLoop.scheduleTask(in: .seconds(3)) { channel.close(promise: nil) }
                channel.writeAndFlush(request, promise: nil)
                channel.closeFuture.whenComplete { _ in
                    deadline.cancel()
                    answer.give(false)  // no-op when the status line already answered
                }
            }
        }
        return answer.promise.futureResult
    }

    /// The NOTIFY body: LastChange (AVTransport, RenderingControl) or the variables themselves.
    static func body(_ service: RendererService, _ values: [(String, String)]) -> String {
        var xml = #"<?xml version="1.0" encoding="utf-8"?>"# + "\n" + #"<e:propertyset xmlns:e="urn:schemas-upnp-org:event-1-0">"#
        if service.usesLastChange {
            xml += "<e:property><LastChange>\(XMLText.escape(lastChange(service, values)))</LastChange></e:property>"
        } else {
            for (name, value) in values { xml += "<e:property><\(name)>\(XMLText.escape(value))</\(name)></e:property>" }
        }
        return xml + "</e:propertyset>\n"
    }

    /// `<Event><InstanceID val="0">…</InstanceID></Event>` for instance 0.
    static func lastChange(_ service: RendererService, _ values: [(String, String)]) -> String {
        let namespace = service == .avTransport ? "urn:schemas-upnp-org:metadata-1-0/AVT/" : "urn:schemas-upnp-org:metadata-1-0/RCS/"
        var xml = "<Event xmlns=\"\(namespace)\"><InstanceID val=\"0\">"
        for (name, value) in values {
            let channel = service == .renderingControl && (name == "Volume" || name == "Mute") ? " channel=\"Master\"" : ""
            xml += "<\(name)\(channel) val=\"\(XMLText.escape(value))\"/>"
        }
        return xml + "</InstanceID></Event>"
    }
}

/// A promise given once, whichever of its answers comes first.
private final class OnceAnswer: Sendable {
    let promise: EventLoopPromise<Bool>
    private let given = Locked(false)

    init(_ promise: EventLoopPromise<Bool>) { self.promise = promise }

    func give(_ value: Bool) {
        let first = given.withLock { given in
            defer { given = true }
            return !given
        }
        if first { promise.succeed(value) }
    }
}

/// Reads a NOTIFY's answer up to its status line, then closes.
private final class StatusLineReader: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    private let answer: OnceAnswer
    private var seen = ByteBuffer()

    init(_ answer: OnceAnswer) { self.answer = answer }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        seen.writeBuffer(&buffer)
        guard let line = seen.readableBytesView.firstIndex(of: UInt8(ascii: "\n")) ?? (seen.readableBytes > 256 ? seen.readerIndex : nil)
        else { return }
        let text = String(decoding: seen.readableBytesView[seen.readerIndex..<line], as: UTF8.self)
        let parts = text.split(separator: " ")
        let ok = parts.count >= 2 && parts[0].hasPrefix("HTTP/1.") && parts[1].hasPrefix("2")
        answer.give(ok)
        context.close(promise: nil)
    }
}
