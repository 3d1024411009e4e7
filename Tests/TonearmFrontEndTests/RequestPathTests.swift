import Logging
import NIOCore
import NIOEmbedded
import Testing
import TonearmProtocol

@testable import TonearmFrontEnd

/// The request path (`LineDecoder` and `OrderedRequestHandler`) on NIO's `EmbeddedChannel`, with
/// a session that answers each line: ordering, waiting replies, back-pressure, replies held
/// until durable, the line cap, half-close. No daemon, no player.
@Suite("The request path on an embedded channel")
struct RequestPathTests {
    /// Answers `x` with `x!`; `wait…` waits (`finish` answers it later); `edit…` records a
    /// change before it answers; `quit` writes its answer and closes.
    final class EchoSession: RequestSession {
        var served: [String] = []
        var tooLong: [Int] = []
        /// Weak: the handler owns the session, as in the daemon.
        weak var connection: (any RequestConnection)?
        var changes: Int = 0
        var ended = false

        func start(_ connection: any RequestConnection) { self.connection = connection }

        func serve(_ line: InboundLine, _ connection: any RequestConnection) -> RequestServed {
            switch line {
            case .tooLong(let limit):
                tooLong.append(limit)
                connection.write(ByteBuffer(string: "too long\n"))
                return .answered
            case .line(let buffer):
                let text = String(buffer: buffer)
                served.append(text)
                if text.hasPrefix("wait") { return .waiting }
                if text.hasPrefix("edit") { changes += 1 }
                if text == "quit" {
                    connection.writeAndClose(ByteBuffer(string: "bye\n"))
                    return .answered
                }
                connection.write(ByteBuffer(string: text + "!\n"))
                return .answered
            }
        }

        func finish(_ reply: String) {
            connection?.write(ByteBuffer(string: reply + "\n"))
            connection?.finished()
        }

        var waitsForNews: Bool { false }
        func connectionEnded() { ended = true }
    }

    /// Counts the reads that reach the socket's end of the pipeline.
    final class ReadCounter: ChannelOutboundHandler {
        typealias OutboundIn = Any
        var reads = 0
        func read(context: ChannelHandlerContext) {
            reads += 1
            context.read()
        }
    }

    /// Durability the test grants by hand.
    final class Durability: @unchecked Sendable {
        // Only the test's thread, which is the embedded loop's, touches these.
        var pending: [(Int, @Sendable () -> Void)] = []
        let session: EchoSession
        init(_ session: EchoSession) { self.session = session }
        var interface: ChangeDurability {
            ChangeDurability(
                recorded: { [self] in session.changes }, whenDurable: { [self] sequence, then in pending.append((sequence, then)) })
        }
        func grantAll() {
            let granted = pending
            pending = []
            for (_, then) in granted { then() }
        }
    }

    /// The channel with the request path, finished when the test is done with it (nothing of it
    /// may outlive the test: LeakSanitizer runs these too).
    final class Rig {
        let channel = EmbeddedChannel()
        let session = EchoSession()
        let reads = ReadCounter()
        let durability: Durability

        init(maxLineLength: Int = 64, durable: Bool = false, limits: ClientLimits = ClientLimits()) throws {
            durability = Durability(session)
            try channel.pipeline.syncOperations.addHandler(reads)
            try channel.pipeline.syncOperations.addRequestPath(
                session, maxLineLength: maxLineLength, limits: limits, logger: Logger(label: "test"),
                peer: ClientPeer(credentials: nil, description: "test"), changes: durable ? durability.interface : nil)
            try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        }

        deinit {
            durability.pending.removeAll()
            _ = try? channel.finish(acceptAlreadyClosed: true)
        }

        func send(_ text: String) throws { try channel.writeInbound(ByteBuffer(string: text)) }

        /// Everything written to the client so far, as text.
        func output() throws -> String {
            var text = ""
            while let buffer = try channel.readOutbound(as: ByteBuffer.self) { text += String(buffer: buffer) }
            return text
        }
    }

    @Test func linesAreAnsweredInOrderAndABurstIsOneWrite() throws {
        let rig = try Rig()
        try rig.send("a\nb\r\nc\n")
        #expect(try rig.channel.readOutbound(as: ByteBuffer.self).map { String(buffer: $0) } == "a!\nb!\nc!\n")
        #expect(try rig.output() == "")
        #expect(rig.session.served == ["a", "b", "c"])
    }

    @Test func aLineSplitAcrossReadsIsOneLine() throws {
        let rig = try Rig()
        try rig.send("he")
        try rig.send("llo")
        #expect(rig.session.served.isEmpty)
        try rig.send("\nx\n")
        #expect(try rig.output() == "hello!\nx!\n")
    }

    @Test func aWaitingReplyHoldsTheLinesBehindItAndReading() throws {
        let rig = try Rig()
        try rig.send("wait\nb\n")
        #expect(rig.session.served == ["wait"])
        let before = rig.reads.reads
        rig.channel.read()
        #expect(rig.reads.reads == before, "no read while a reply is pending")
        #expect(try rig.output() == "")
        rig.session.finish("done")
        #expect(try rig.output() == "done\nb!\n")
        #expect(rig.reads.reads == before + 1, "the held read goes on once the reply is out")
    }

    @Test func aClientThatDoesNotTakeItsRepliesIsNotServed() throws {
        let rig = try Rig()
        rig.channel.isWritable = false
        rig.channel.pipeline.fireChannelWritabilityChanged()
        try rig.send("a\nb\n")
        #expect(rig.session.served.isEmpty)
        let before = rig.reads.reads
        rig.channel.read()
        #expect(rig.reads.reads == before, "no read while the client does not take what was written")
        rig.channel.isWritable = true
        rig.channel.pipeline.fireChannelWritabilityChanged()
        #expect(try rig.output() == "a!\nb!\n")
        #expect(rig.reads.reads == before + 1, "the held read goes on once it takes them")
    }

    @Test func aReplyAfterAChangeWaitsUntilTheChangeIsDurable() throws {
        let rig = try Rig(durable: true)
        try rig.send("edit\nb\nc\n")
        #expect(rig.session.served == ["edit", "b", "c"], "the lines behind are served meanwhile")
        #expect(try rig.output() == "", "nothing is told before the change is durable")
        #expect(rig.durability.pending.map(\.0) == [1])
        rig.durability.grantAll()
        rig.channel.embeddedEventLoop.run()
        let told = try rig.output()
        #expect(told == "edit!\nb!\nc!\n", "then all of it, in order: \(told.debugDescription)")
        try rig.send("d\n")
        #expect(try rig.output() == "d!\n", "with no change, at once")
    }

    @Test func anOverlongLineIsToldAndTheNextLineIsServed() throws {
        let rig = try Rig(maxLineLength: 8)
        try rig.send("0123456789\nok\n")
        #expect(try rig.output() == "too long\nok!\n")
        // Without its newline yet: refused once, however many reads it takes.
        try rig.send(String(repeating: "x", count: 20))
        try rig.send(String(repeating: "x", count: 20))
        try rig.send("\nfine\n")
        #expect(rig.session.tooLong == [8, 8])
        #expect(try rig.output() == "too long\nfine!\n")
    }

    @Test func afterAHalfCloseTheRepliesGoOutThenItCloses() throws {
        let rig = try Rig()
        try rig.send("wait\nb\n")
        rig.channel.pipeline.fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        rig.channel.embeddedEventLoop.run()
        #expect(rig.channel.isActive, "open while a reply is pending")
        rig.session.finish("done")
        rig.channel.embeddedEventLoop.run()
        #expect(try rig.output() == "done\nb!\n")
        #expect(!rig.channel.isActive, "closed once everything is answered")
        #expect(rig.session.ended)
    }

    @Test func writeAndCloseServesNothingAfter() throws {
        let rig = try Rig()
        try rig.send("quit\nafter\n")
        rig.channel.embeddedEventLoop.run()
        #expect(try rig.output() == "bye\n")
        #expect(rig.session.served == ["quit"])
        #expect(!rig.channel.isActive)
    }

    @Test func aCloseAskedWhileRepliesAreHeldComesAfterThem() throws {
        let rig = try Rig(durable: true)
        try rig.send("edit\nquit\n")
        rig.channel.embeddedEventLoop.run()
        #expect(rig.channel.isActive)
        #expect(try rig.output() == "")
        rig.durability.grantAll()
        rig.channel.embeddedEventLoop.run()
        #expect(try rig.output() == "edit!\nbye\n")
        #expect(!rig.channel.isActive)
    }
}
