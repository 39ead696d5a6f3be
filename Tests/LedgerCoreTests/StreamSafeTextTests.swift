import LedgerCore
import Testing

/// Swift compares and hashes a run of k combining marks in about k²/4 steps; what comes in is held to Unicode's
/// stream-safe limit of 30 in a row, and what the ledger stored reads back as it was written.
@Suite("Stream-safe text: at most 30 combining marks in a row")
struct StreamSafeTextTests {
    static func run(_ marks: Int) -> String { "e" + String(repeating: "\u{0301}", count: marks) }

    @Test func thirtyCombiningMarksInARowAreTextThirtyOneAreNot() {
        #expect(StreamSafeText.isStreamSafe(Self.run(30).unicodeScalars))
        #expect(!StreamSafeText.isStreamSafe(Self.run(31).unicodeScalars))
        // A starter ends a run.
        #expect(StreamSafeText.isStreamSafe((Self.run(30) + Self.run(30)).unicodeScalars))
        #expect(!StreamSafeText.isStreamSafe(utf8: Array(Self.run(31).utf8)))
        #expect(StreamSafeText.isStreamSafe(utf8: Array("plain ASCII".utf8)))
    }

    @Test func incomingJSONIsHeldToItInValuesKeysAndEscapesAndStoredJSONReadsBackAsWritten() throws {
        func note(_ text: String) -> [UInt8] { Array(#"{"note": "\#(text)"}"#.utf8) }
        #expect(throws: JSONSyntaxError.self) { try JSONValue(parsingIncoming: note(Self.run(31))) }
        #expect(throws: JSONSyntaxError.self) { try JSONValue(parsingIncoming: Array(#"{"\#(Self.run(31))": 1}"#.utf8)) }
        #expect(throws: JSONSyntaxError.self) {
            try JSONValue(parsingIncoming: note("e" + String(repeating: #"\u0301"#, count: 31)))
        }
        #expect(try JSONValue(parsingIncoming: note(Self.run(30)))["note"] == .string(Self.run(30)))
        #expect(try JSONValue(parsing: note(Self.run(31)))["note"] == .string(Self.run(31)))
    }
}
