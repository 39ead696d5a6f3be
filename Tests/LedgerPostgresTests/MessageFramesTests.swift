import NIOCore
@testable import LedgerPostgres
import Testing

/// The commit watch finds PostgreSQL's messages in bytes that TCP cuts anywhere: a header split between reads, a
/// body longer than a read, many messages in one.
@Suite("Database: PostgreSQL's messages found in bytes cut anywhere")
struct MessageFramesTests {
    /// CommandComplete, an ErrorResponse, ReadyForQuery, and a DataRow bigger than any read below.
    let messages: [(type: Character, body: [UInt8])] = [
        ("C", Array("INSERT 0 1\0".utf8)), ("E", Array(repeating: 7, count: 40)), ("Z", [UInt8(ascii: "I")]),
        ("D", Array(repeating: 0x5A, count: 5_000)), ("Z", [UInt8(ascii: "I")]), ("I", []),
    ]

    var stream: [UInt8] {
        messages.flatMap { message -> [UInt8] in
            let length = UInt32(message.body.count + 4)
            return [UInt8(ascii: message.type.unicodeScalars.first ?? "?")]
                + [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: length >> $0) } + message.body
        }
    }

    @Test(arguments: [1, 2, 3, 5, 7, 64, 4_096, 100_000])
    func everyMessageIsFoundWhereverTheBytesAreCut(readSize: Int) {
        var frames = MessageFrames()
        var found: [Character] = []
        let bytes = stream
        for start in stride(from: 0, to: bytes.count, by: readSize) {
            let read = ByteBuffer(bytes: bytes[start..<min(bytes.count, start + readSize)])
            frames.scan(read) { found.append(Character(UnicodeScalar($0))) }
        }
        #expect(found == messages.map(\.type))
    }
}
