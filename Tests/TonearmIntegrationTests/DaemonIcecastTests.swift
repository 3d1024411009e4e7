import Foundation
import Testing
import TonearmTestSupport

extension DaemonTests {
    /// Debian's real Icecast server, fed by `ffmpeg -re` with an MP3 and an Ogg/Opus mount, played
    /// by the real daemon; the MP3 mount's title is changed through Icecast's admin interface
    /// while it plays.
    @Suite("Daemon plays a real Icecast server", .serialized, .realDaemon(minutes: 2))
    struct DaemonIcecastTests {
        @Test func anMP3MountPlaysAndItsTitleIsAnnouncedWhenHeard() throws {
            let icecast = try IcecastServer()
            defer { icecast.stop() }
            try icecast.startSource(Fixtures.path("tone.mp3"), mount: "/radio.mp3", format: "mp3", contentType: "audio/mpeg")
            let daemon = try DaemonProcess(arguments: ["--device", "null", "--pace"])
            let client = try daemon.connect()
            let watcher = try daemon.connect()
            #expect(try watcher.call("subscribe", ["events": ["item", "transition"]]).result != nil)
            let load = try client.call("load", ["url": icecast.url("/radio.mp3"), "play": true], timeout: 15)
            #expect(load.stateName == "playing", "\(load)")
            let media = try #require(load.result?["media"] as? [String: Any])
            #expect((media["codec"] as? String)?.hasPrefix("mp3") == true && media["live"] as? Bool == true, "\(media)")
            _ = try waitForStatus(client, timeout: 10) { ($0["position"] as? Double ?? 0) > 1 }

            let before = try #require(client.call("status").result)
            let (position, buffer) = (before["position"] as? Double ?? 0, before["buffer"] as? Double ?? 0)
            try icecast.setTitle("Tonearm Test - Live Title", mount: "/radio.mp3")
            let events = try readEvents(watcher, timeout: 20) {
                $0["type"] as? String == "metadata" && $0["title"] as? String == "Live Title"
            }
            let heardAt = try client.call("status").result?["position"] as? Double ?? -1
            #expect(events.last?["artist"] as? String == "Tonearm Test")
            // The new title follows everything already buffered: it is heard only after that.
            #expect(heardAt >= position + buffer - 0.3, "updated at \(position) s with \(buffer) s buffered; announced at \(heardAt) s")
            let tags = (try client.call("status").result?["media"] as? [String: Any])?["tags"] as? [String: Any]
            #expect(
                tags?["title"] as? String == "Live Title" && tags?["artist"] as? String == "Tonearm Test", "\(String(describing: tags))")
            #expect(!events.contains { $0.transitionTo == "buffering" }, "a healthy stream never starves: \(events)")
        }

        @Test func anOggOpusMountPlays() throws {
            let icecast = try IcecastServer()
            defer { icecast.stop() }
            try icecast.startSource(Fixtures.path("tone.opus"), mount: "/radio.opus", format: "ogg", contentType: "audio/ogg")
            let daemon = try DaemonProcess(arguments: ["--device", "null", "--pace"])
            let client = try daemon.connect()
            let load = try client.call("load", ["url": icecast.url("/radio.opus"), "play": true], timeout: 15)
            #expect(load.stateName == "playing", "\(load)")
            let media = try #require(load.result?["media"] as? [String: Any])
            #expect(media["codec"] as? String == "opus" && media["live"] as? Bool == true, "\(media)")
            let status = try waitForStatus(client, timeout: 10) { ($0["position"] as? Double ?? 0) > 2 }
            #expect(status.name == "playing", "\(status)")
        }
    }
}
