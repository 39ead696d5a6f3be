import Foundation
import LedgerCore
@testable import LedgerPostgres
import LedgerTestSupport
import Testing

/// `ledger reconcile` reads the provider file with the project's RFC 4180 reader and writes `--csv` with its writer.
@Suite("CLI: reconcile reads and writes RFC 4180 CSV")
struct ReconcileCSVCommandTests {
    static let header = "transaction_id,product_id,amount_minor,currency,status,occurred_at"

    func withFile<T>(_ text: String, _ body: (String) async throws -> T) async throws -> T {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("provider-\(UUID().uuidString).csv")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(text.utf8).write(to: file)
        return try await body(file.path)
    }

    @Test func aByteOrderMarkAndAQuotedLineBreakAreReadAndTheCSVOutputReadsBack() async throws {
        try await TestDatabase.withURL { url, client in
            let ids = try await recordHappyOrders(1, on: Ledger(client: client))
            let granted = try #require(try await Ledger(client: client).order(ids[0]))
            let today = String(RFC3339.format(Date()).prefix(10))
            let text = "\u{FEFF}" + Self.header + "\r\n"
                + "\(try #require(granted.transactionId)),gems.100,499,USD,paid,\(today)T10:00:00Z\r\n"
                + "px-1,\"gems\n100\",499,USD,paid,\(today)T10:00:00Z\r\n"
                + "px-2,gems.100,499,USD,paid,\(today)T10:00:00Z\r\n"
            let outcome = try await withFile(text) { path in
                try await LedgerBinary.run(
                    ["reconcile", path, "--provider", "app_store", "--from", today, "--to", today, "--csv", "--all"], databaseURL: url)
            }
            #expect(outcome.status == 1, "differences exit 1: \(outcome.stderr.suffix(400))")
            let records = try CSVReader.records(in: Array(outcome.stdout.utf8)).map(\.fields)
            #expect(records.first == ReconciliationRow.csvHeader)
            let rows = records.dropFirst().map { Dictionary(zip(ReconciliationRow.csvHeader, $0), uniquingKeysWith: { first, _ in first }) }
            #expect(rows.map { $0["result"] } == ["matched", "malformed", "missing_in_ledger"], "\(outcome.stdout)")
            #expect(rows.map { $0["line"] } == ["2", "3", "5"])
            #expect(rows.dropFirst().first?["problem"]?.contains("product_id") == true)
        }
    }

    /// Distinct exit statuses (sysexits) let cron tell "the ledger and the provider differ" (1) from "the file is
    /// bad" (65), "the file is not there" (66) and "the command was written wrong" (64).
    @Test func anUnreadableFileExits65NamingTheLineAndAMissingOne66() async throws {
        try await TestDatabase.withURL { url, _ in
            let today = String(RFC3339.format(Date()).prefix(10))
            let good = "px-1,gems.100,499,USD,paid,\(today)T10:00:00Z\n"
            let cases = [
                (Self.header + "\n" + good + String(repeating: "x", count: 70_000) + "\n", "line 3: the record is longer than 65536 bytes"),
                (Self.header + "\n" + good + good + "\"px-3," + good, "line 4: a quoted field is never closed"),
            ]
            for (text, words) in cases {
                let outcome = try await withFile(text) { path in
                    try await LedgerBinary.run(
                        ["reconcile", path, "--provider", "app_store", "--from", today, "--to", today], databaseURL: url)
                }
                #expect(outcome.status == 65, "bad data: \(outcome.stderr.suffix(400))")
                #expect(outcome.stderr.contains(words), "\(outcome.stderr.suffix(400))")
                #expect(outcome.stdout.isEmpty)
            }
            let missing = try await LedgerBinary.run(
                ["reconcile", "/nonexistent/provider.csv", "--provider", "app_store", "--from", today, "--to", today], databaseURL: url)
            #expect(missing.status == 66, "no input: \(missing.stderr)")
            #expect(missing.stderr.contains("cannot open /nonexistent/provider.csv"))
            let usage = try await LedgerBinary.run(
                ["reconcile", "/nonexistent/provider.csv", "--provider", "app_store", "--from", today], databaseURL: url)
            #expect(usage.status == 64, "usage: \(usage.stderr)")
        }
    }

    /// `--json` is one document, as the API's (`rows` and `summary`), not a line per row; the table has a header.
    @Test func jsonIsOneDocumentAndTheTableHasAHeader() async throws {
        try await TestDatabase.withURL { url, client in
            let ids = try await recordHappyOrders(1, on: Ledger(client: client))
            let granted = try #require(try await Ledger(client: client).order(ids[0]))
            let today = String(RFC3339.format(Date()).prefix(10))
            let text = Self.header + "\n" + "\(try #require(granted.transactionId)),gems.100,499,USD,paid,\(today)T10:00:00Z\n"
                + "px-1,gems.100,499,USD,paid,\(today)T10:00:00Z\n" + "px-2,gems.100,499,USD,paid,\(today)T10:00:00Z\n"
            let (json, table) = try await withFile(text) { path in
                let arguments = ["reconcile", path, "--provider", "app_store", "--from", today, "--to", today]
                return (try await LedgerBinary.run(arguments + ["--json"], databaseURL: url),
                        try await LedgerBinary.run(arguments, databaseURL: url))
            }
            #expect(json.status == 1)
            let document = try JSONValue(parsing: Array(json.stdout.utf8))
            guard case .array(let rows)? = document["rows"] else { Issue.record("no rows: \(json.stdout)"); return }
            #expect(rows.compactMap { $0["transactionId"] } == ["px-1", "px-2"], "\(json.stdout)")
            #expect(document["summary"]?["missing_in_ledger"]?["count"] == .int(2), "\(json.stdout)")
            #expect(document["summary"]?["matched"]?["count"] == .int(1))

            let lines = table.stdout.split(separator: "\n")
            #expect(lines.first?.split(separator: " ", omittingEmptySubsequences: true) == ["LINE", "RESULT", "TRANSACTION", "ORDER", "LEDGER", "PROVIDER", "PROBLEM"], "\(table.stdout)")
            #expect(lines.count == 3, "a header and the two rows that differ: \(table.stdout)")
            // Columns line up: every line's RESULT and TRANSACTION begin where the header's do (tabs let them drift).
            let starts = { (line: Substring, word: String) in line.range(of: word).map { line.distance(from: line.startIndex, to: $0.lowerBound) } }
            #expect(lines.dropFirst().allSatisfy { starts($0, "missing_in_ledger") == starts(lines[0], "RESULT") }, "\(table.stdout)")
            #expect(!table.stdout.contains("\t"))
        }
    }
}
