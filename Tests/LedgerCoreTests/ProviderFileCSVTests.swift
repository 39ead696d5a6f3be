import LedgerCore
import Testing

/// A provider file read through the CSV codec: what reconciliation sees, line numbers included.
@Suite("CSV: provider files for reconciliation")
struct ProviderFileCSVTests {
    static let header = "transaction_id,product_id,amount_minor,currency,status,occurred_at"

    func lines(_ text: String, chunkSize: Int = 64 * 1024) throws(ProviderFileError) -> [ProviderLine] {
        var reader = ProviderFileReader()
        var lines: [ProviderLine] = []
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            lines += try reader.feed(Array(bytes.prefix(chunkSize)))
            bytes = bytes.dropFirst(chunkSize)
        }
        return lines + (try reader.finish())
    }

    @Test func aByteOrderMarkBeforeTheHeaderIsNotPartOfTheFirstColumn() throws {
        let read = try lines("\u{FEFF}" + Self.header + "\r\ntx-1,gems.100,499,USD,paid,2026-11-02T10:00:00Z\r\n")
        #expect(read.count == 1 && read.first?.line == 2)
        #expect(try read.first?.transaction.get().transactionId == "tx-1")
    }

    @Test(arguments: [1, 3, 64 * 1024])
    func aQuotedLineBreakIsOneMalformedRecordAndLaterLinesKeepTheirNumbers(chunkSize: Int) throws {
        let text = Self.header + "\n"
            + "tx-1,\"gems\n100\",499,USD,paid,2026-11-02T10:00:00Z\n"
            + "\"tx-2\",\"gems.100\",\"499\",USD,paid,2026-11-02T10:00:00Z\n"
        let read = try lines(text, chunkSize: chunkSize)
        #expect(read.map(\.line) == [2, 4], "two records, the first spanning lines 2–3")
        guard case .failure(let problem)? = read.first?.transaction else { Issue.record("line 2 should be malformed"); return }
        #expect(problem.description.contains("product_id"))
        #expect(try read.last?.transaction.get().productId == "gems.100")
        // Every other value of the malformed record is kept: finance finds the payment without opening the file.
        guard case .malformed(let record) = problem else { Issue.record("\(problem)"); return }
        #expect(record.field == "product_id")
        #expect(record.values == ProviderRecordValues(
            transactionId: "tx-1", productId: nil, amount: 499, currency: "USD", status: .paid,
            occurredAt: RFC3339.parse("2026-11-02T10:00:00Z")))
    }

    @Test func anUnreadableFileIsRefusedNamingTheLine() throws {
        #expect(throws: ProviderFileError.unreadable(.recordTooLong(line: 3, limit: 64 * 1024))) {
            try lines(Self.header + "\nok\n" + String(repeating: "x", count: 70_000) + "\n")
        }
        #expect(throws: ProviderFileError.unreadable(.unterminatedQuote(line: 2))) {
            try lines(Self.header + "\n\"tx-1,gems.100,499,USD,paid,2026-11-02T10:00:00Z\n")
        }
        #expect(throws: ProviderFileError.missingColumns(ProviderFile.columns)) { try lines("") }
        #expect(throws: ProviderFileError.unreadable(.unterminatedQuote(line: 2))) {
            try ProviderFileReader.check(Array((Self.header + "\n\"open").utf8), sliceSize: 2)
        }
    }
}
