import Foundation
import NIOCore
import Testing
import TonearmEngine
import TonearmFrontEnd
import TonearmMedia

@testable import TonearmPlayer
@testable import TonearmProtocol
@testable import TonearmRPC

@Suite("Answers encoded once per change", .timeLimit(.minutes(1)))
struct EncodedOnceTests {
    @Test func anAnswerIsEncodedOncePerChange() {
        let encoding = EncodedOnce<PlayerStatus>()
        var encodings = 0
        func encode(_ status: PlayerStatus) -> ByteBuffer {
            encodings += 1
            var bytes = ByteBuffer()
            JSONCoding.serialize(ProtocolEncoding.status(status), into: &bytes)
            return bytes
        }
        var status = PlayerStatus(
            state: .paused, position: 12.5, buffered: 0, duration: 60, media: nil,
            output: OutputConfiguration(device: "null"), interruption: nil, current: 3, next: 4,
            queueVersion: 9, volume: 80, replayGain: ReplayGainSettings())
        let first = encoding.bytes(for: status, encode: encode)
        #expect(JSONValue.encoded(first).text == ProtocolEncoding.status(status).text)
        // The same status again: the stored bytes, no new encoding.
        let again = encoding.bytes(for: status, encode: encode)
        #expect(again == first && encodings == 1)
        status.position = 13
        status.volume = 70
        let changed = JSONValue.encoded(encoding.bytes(for: status, encode: encode))
        #expect(encodings == 2)
        #expect(changed.text == ProtocolEncoding.status(status).text)
        #expect(changed.text.contains(#""position":13"#) && changed.text.contains(#""volume":70"#))
    }

}
