import Foundation
import Testing
import TonearmTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Many clients, a client that never reads, and thousands of cycles against the real daemon.
@Suite("Daemon under load", .serialized, .timeLimit(.minutes(3)))
struct DaemonLoadTests {
    @Test func twoHundredClientsAtOnceAndANonReaderIsDropped() throws {
        let daemon = try DaemonProcess(arguments: ["--device", "null"])
        // A subscriber that never reads, with a small receive buffer so its backlog builds fast.
        let nonReader = try daemon.connect()
        var small: Int32 = 4096
        setsockopt(nonReader.fd, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
        #expect(try nonReader.call("subscribe", ["events": ["transition", "performance"]]).result != nil)

        let clients = try (0..<200).map { _ in try daemon.connect() }
        let driver = try daemon.connect()
        var cycles = 0
        var worst = 0.0
        // Rounds of 200 requests in flight at once, with load/play/stop cycles between them
        // making events, until the daemon gives up on the non-reader.
        while !daemon.log.contains("not reading its events") {
            try #require(cycles < 4000, "the non-reader was never dropped")
            if cycles % 100 == 0 {
                let started = Date()
                for (index, client) in clients.enumerated() {
                    try client.send(line: #"{"jsonrpc":"2.0","id":\#(index),"method":"status"}"#)
                }
                for (index, client) in clients.enumerated() {
                    let answer = try client.readJSON()
                    #expect(answer["id"] as? Int == index && answer.result?["state"] != nil, "\(answer)")
                }
                worst = max(worst, Date().timeIntervalSince(started))
            }
            #expect(try driver.call("load", ["url": Fixtures.path(cycles % 2 == 0 ? "tone.wav" : "tone.mp3"), "play": true]).result != nil)
            #expect(try driver.call("stop").result != nil)
            cycles += 1
        }
        #expect(worst < 2, "200 requests at once all answered within \(worst) s")
        // The non-reader was disconnected: what was queued for it ends in end-of-stream.
        var lines = 0
        while try nonReader.readLine(timeout: 10) != nil { lines += 1 }
        #expect(lines < 6000, "its backlog was bounded: \(lines) lines")
        let started = Date()
        #expect(try clients[0].call("ping")["result"] as? String == "pong")
        #expect(Date().timeIntervalSince(started) < 0.1)
        #expect(daemon.process.isRunning)
    }

    @Test func twoThousandCyclesLeaveNoDescriptorsThreadsOrMemoryBehind() throws {
        let daemon = try DaemonProcess(arguments: ["--device", "null"])
        let client = try daemon.connect()
        let pid = daemon.process.processIdentifier
        func cycle(_ index: Int) throws {
            let fixture = ["tone.flac", "tone.mp3", "tone.ogg", "tone.wav"][index % 4]
            #expect(try client.call("load", ["url": Fixtures.path(fixture), "play": true]).result != nil)
            let seek = try client.call("seek", ["position": 1.5])
            #expect(seek.result != nil, "\(seek)")
            #expect(try client.call("stop").result != nil)
        }
        /// Decoder threads leave just after `stop` answers; give them a moment.
        func settled(_ baseline: ProcessResources?) throws -> ProcessResources {
            var now = try ProcessResources(pid: pid)
            let deadline = Date().addingTimeInterval(3)
            while let baseline, now.threads > baseline.threads || now.fileDescriptors > baseline.fileDescriptors,
                  Date() < deadline {
                usleep(20_000)
                now = try ProcessResources(pid: pid)
            }
            return now
        }
        // Warm up: the allocator's arenas (one per decoder thread that ever ran) and FFmpeg's
        // one-time tables reach their size; measured by hand, resident memory then stays within
        // ±0.5 MiB of a plateau over 10,000 more cycles.
        for index in 0..<1000 { try cycle(index) }
        let before = try settled(nil)
        for index in 0..<2000 { try cycle(index) }
        let after = try settled(before)
        #expect(after.fileDescriptors <= before.fileDescriptors, "before: \(before); after: \(after)")
        #expect(after.threads <= before.threads, "before: \(before); after: \(after)")
        #expect(after.residentKiB - before.residentKiB < 1024, "before: \(before); after: \(after)")
        #expect(try client.call("ping")["result"] as? String == "pong")
    }
}
