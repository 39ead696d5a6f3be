import Foundation
@testable import LedgerPostgres
import LedgerTestSupport
import PostgresNIO
import Testing

/// The rebuild fills its tables with `COPY … FROM STDIN` text rows: every value must come back from PostgreSQL as it
/// was written, whatever characters it holds, or a rebuilt projection would differ from the fold of its events.
@Suite("Rebuild: COPY text rows")
struct CopyTextRowsTests {
    struct Row: Equatable {
        var text: String?
        var number: Int64?
        var time: Date?
        var list: [String]
    }

    static let hostile: [Row] = [
        Row(text: "tab\there", number: 0, time: Date(timeIntervalSince1970: 1_764_115_149.876_401), list: []),
        Row(text: "line\nbreak\r\nand carriage", number: -1, time: nil, list: ["a,b", "c\"d", "e\\f", "{g}", "NULL"]),
        Row(text: "back\\slash and \\N and \\.", number: .max, time: Date(timeIntervalSince1970: 0), list: [""]),
        Row(text: "\\N", number: .min, time: Date(timeIntervalSince1970: -1.5), list: ["tab\tin", "ümlaut ✓"]),
        Row(text: nil, number: nil, time: Date(timeIntervalSince1970: 253_402_300_799.999_999), list: ["\n"]),
        Row(text: "", number: 42, time: nil, list: [" spaced "]),
    ]

    @Test func everyValueReadsBackAsWritten() async throws {
        try await TestDatabase.withClient { client in
            try await client.withConnection { connection in
                try await connection.query(
                    "CREATE TABLE copied (n int, t text, i int8, at timestamptz, l text[])", logger: .init(label: "test"))
                try await connection.copyFrom(
                    table: "copied", columns: ["n", "t", "i", "at", "l"], logger: .init(label: "test")
                ) { writer in
                    var rows = CopyTextRows()
                    for (index, row) in Self.hostile.enumerated() {
                        rows.append(Int64(index))
                        rows.append(row.text)
                        rows.append(row.number)
                        rows.append(row.time)
                        rows.append(array: row.list)
                        rows.endRow()
                    }
                    try await writer.write(rows.take())
                }
                var read: [Row] = []
                for try await (text, number, time, list) in try await connection.query(
                    "SELECT t, i, at, l FROM copied ORDER BY n", logger: .init(label: "test")
                ).decode((String?, Int64?, Date?, [String]).self) {
                    read.append(Row(text: text, number: number, time: time, list: list))
                }
                #expect(read.count == Self.hostile.count)
                for (written, back) in zip(Self.hostile, read) {
                    #expect(back.text == written.text)
                    #expect(back.number == written.number)
                    #expect(back.list == written.list)
                    // Times are written to the microsecond, as PostgreSQL keeps them.
                    #expect(back.time.map(Timestamp.microseconds) == written.time.map(Timestamp.microseconds))
                }
            }
        }
    }
}
