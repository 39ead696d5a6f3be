import Foundation
import LedgerCore
import NIOCore

/// Rows in the text format of `COPY … FROM STDIN` (PostgreSQL's manual, COPY, "Text Format"): fields separated by
/// tabs, each row ended by a newline, NULL written `\N`, and a backslash, newline, carriage return or tab inside a
/// value escaped with a backslash, so that no value can end its field or its row early.
///
/// The rebuild fills its tables this way: COPY is PostgreSQL's cheapest way in (no statement per batch, no arrays
/// to unpack). PostgresNIO's COPY speaks only the text format. The rows gather in a byte array (appending to one costs
/// less than writing to a `ByteBuffer` piece by piece) that `take()` hands over as one buffer.
struct CopyTextRows {
    /// How many bytes of rows to gather before sending them: one message to PostgreSQL per 64 KiB or so.
    static let sendSize = 64 * 1024

    private(set) var bytes: [UInt8] = []
    private var startsRow = true

    init() {
        bytes.reserveCapacity(Self.sendSize + 1024)
    }

    /// A text value, escaped; nil is NULL.
    mutating func append(_ text: String?) {
        separate()
        guard var text else { return writeNull() }
        text.withUTF8 { text in
            var start = 0
            for (index, byte) in text.enumerated() {
                let escape: UInt8
                switch byte {
                case UInt8(ascii: "\\"): escape = UInt8(ascii: "\\")
                case UInt8(ascii: "\n"): escape = UInt8(ascii: "n")
                case UInt8(ascii: "\r"): escape = UInt8(ascii: "r")
                case UInt8(ascii: "\t"): escape = UInt8(ascii: "t")
                default: continue
                }
                bytes.append(contentsOf: text[start..<index])
                bytes.append(UInt8(ascii: "\\"))
                bytes.append(escape)
                start = index + 1
            }
            bytes.append(contentsOf: text[start...])
        }
    }

    /// An integer in decimal; nil is NULL.
    mutating func append(_ value: Int64?) {
        separate()
        guard let value else { return writeNull() }
        JSONValue.writeInteger(value, to: &bytes)
    }

    /// A time as RFC 3339 text to the microsecond (how the ledger rounds every time it writes); nil is NULL.
    mutating func append(_ date: Date?) {
        separate()
        guard let date else { return writeNull() }
        RFC3339.write(date, to: &bytes)
    }

    /// A `text[]` value: an array literal with every element quoted, `"` and `\` inside an element escaped.
    mutating func append(array elements: [String]) {
        append(ArrayLiteral.text(elements))
    }

    /// Ends the row: the next value starts the next one.
    mutating func endRow() {
        bytes.append(UInt8(ascii: "\n"))
        startsRow = true
    }

    /// Hands over the rows written so far, as one buffer, and starts again (between rows only).
    mutating func take() -> ByteBuffer {
        defer { bytes.removeAll(keepingCapacity: true) }
        return ByteBuffer(bytes: bytes)
    }

    private mutating func separate() {
        if !startsRow { bytes.append(UInt8(ascii: "\t")) }
        startsRow = false
    }

    private mutating func writeNull() {
        bytes.append(UInt8(ascii: "\\"))
        bytes.append(UInt8(ascii: "N"))
    }
}
