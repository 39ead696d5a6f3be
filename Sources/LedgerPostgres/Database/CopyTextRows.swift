import Foundation
import LedgerCore
import NIOCore

/// Rows in the text format of `COPY … FROM STDIN` (PostgreSQL's manual, COPY, "Text Format"): fields separated by
/// tabs, each row ended by a newline, NULL written `\N`, and a backslash, newline, carriage return or tab inside a
/// value escaped with a backslash, so that no value can end its field or its row early.
///
/// The rebuild fills its tables this way: COPY is PostgreSQL's cheapest way in (no statement per batch, no arrays
/// to unpack), and the rows are written straight into one buffer. PostgresNIO's COPY speaks only the text format.
struct CopyTextRows {
    private(set) var buffer: ByteBuffer
    private var startsRow = true

    /// How many bytes of rows to gather before sending them: one message to PostgreSQL per 64 KiB or so.
    static let sendSize = 64 * 1024

    init() {
        buffer = ByteBufferAllocator().buffer(capacity: Self.sendSize + 1024)
    }

    /// A text value, escaped; nil is NULL.
    mutating func append(_ text: String?) {
        separate()
        guard var text else { return writeNull() }
        text.withUTF8 { bytes in
            var start = 0
            for (index, byte) in bytes.enumerated() {
                let escape: UInt8
                switch byte {
                case UInt8(ascii: "\\"): escape = UInt8(ascii: "\\")
                case UInt8(ascii: "\n"): escape = UInt8(ascii: "n")
                case UInt8(ascii: "\r"): escape = UInt8(ascii: "r")
                case UInt8(ascii: "\t"): escape = UInt8(ascii: "t")
                default: continue
                }
                buffer.writeBytes(bytes[start..<index])
                buffer.writeInteger(UInt8(ascii: "\\"))
                buffer.writeInteger(escape)
                start = index + 1
            }
            buffer.writeBytes(bytes[start...])
        }
    }

    /// An integer in decimal; nil is NULL.
    mutating func append(_ value: Int64?) {
        separate()
        guard let value else { return writeNull() }
        buffer.writeString(String(value))  // at most 20 bytes: a string held inline, no allocation
    }

    /// A time as RFC 3339 text to the microsecond (how the ledger rounds every time it writes); nil is NULL.
    mutating func append(_ date: Date?) {
        separate()
        guard let date else { return writeNull() }
        buffer.writeString(RFC3339.format(date))
    }

    /// A `text[]` value: an array literal with every element quoted, `"` and `\` inside an element escaped.
    mutating func append(array elements: [String]) {
        let quoted = elements.map { element in
            "\"" + element.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
        }
        append("{" + quoted.joined(separator: ",") + "}")
    }

    /// Ends the row: the next value starts the next one.
    mutating func endRow() {
        buffer.writeInteger(UInt8(ascii: "\n"))
        startsRow = true
    }

    /// Hands over the rows written so far and starts an empty buffer (between rows only).
    mutating func take() -> ByteBuffer {
        defer { self = CopyTextRows() }
        return buffer
    }

    private mutating func separate() {
        if !startsRow { buffer.writeInteger(UInt8(ascii: "\t")) }
        startsRow = false
    }

    private mutating func writeNull() {
        buffer.writeStaticString("\\N")
    }
}
