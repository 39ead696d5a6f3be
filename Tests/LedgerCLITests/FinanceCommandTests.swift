import Foundation
import Glibc
import LedgerCore
@testable import LedgerPostgres
import LedgerTestSupport
import Testing

@Suite("CLI: report, reconcile, anomalies")
struct FinanceCommandTests {
    @Test func aMillionLineProviderFileIsReconciledWithFlatMemoryAndExitsNonZeroOnLostOrders() async throws {
        try await TestDatabase.withURL { url, client in
            let ids = try await recordHappyOrders(2, on: Ledger(client: client))
            let granted = try #require(try await Ledger(client: client).order(ids[0]))
            let today = String(RFC3339.format(Date()).prefix(10))
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("provider-\(UUID().uuidString).csv")
            defer { try? FileManager.default.removeItem(at: file) }
            // 1,000,000 transactions the ledger has never seen, plus one it granted.
            try Data().write(to: file)
            let handle = try FileHandle(forWritingTo: file)
            handle.write(Data("transaction_id,product_id,amount_minor,currency,status,occurred_at\n".utf8))
            handle.write(Data("\(try #require(granted.transactionId)),gems.100,499,USD,paid,\(today)T10:00:00Z\n".utf8))
            var chunk = ""
            for n in 0..<1_000_000 {
                chunk += "px-\(n),gems.100,499,USD,paid,\(today)T10:00:00Z\n"
                if n % 50_000 == 49_999 { handle.write(Data(chunk.utf8)); chunk = "" }
            }
            try handle.close()

            let (outcome, peakMiB) = try await LedgerBinary.runMeasuringPeakMemory(
                ["reconcile", file.path, "--provider", "app_store", "--from", today, "--to", today, "--csv"], databaseURL: url)
            #expect(outcome.status == 1, "lost orders make the cron job fail: \(outcome.stderr.suffix(500))")
            let lines = outcome.stdout.split(separator: "\n")
            #expect(lines.count == 1 + 1_000_001, "a header, 1,000,000 missing_in_ledger and one missing_at_provider")
            #expect(lines.last?.contains("missing_at_provider") == true)
            #expect(outcome.stderr.contains("missing_in_ledger") && outcome.stderr.contains("4,990,000.00 USD"))

            print("reconcile of 1,000,001 lines: peak RSS \(peakMiB) MiB")
            #expect(peakMiB < 150, "the file streams: memory stays flat (\(peakMiB) MiB)")
        }
    }

    @Test func revenueAndAnomaliesPrintTablesAndJSON() async throws {
        try await TestDatabase.withURL { url, client in
            try await recordHappyOrders(1, on: Ledger(client: client))
            let today = String(RFC3339.format(Date()).prefix(10))
            let table = try await LedgerBinary.run(["report", "revenue", "--from", today, "--to", today], databaseURL: url)
            #expect(table.status == 0, "\(table.stderr)")
            let lines = table.stdout.split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true) }
            #expect(lines.first == ["DAY", "CURRENCY", "GRANTED", "GRANTED", "AMOUNT", "REFUNDED", "REFUNDED", "AMOUNT", "NET"])
            // Money as people read it in the table; minor units in CSV and JSON.
            #expect(lines.dropFirst().first == [Substring(today), "USD", "1", "4.99", "USD", "0", "0.00", "USD", "4.99", "USD"])
            // Amounts end where their heading ends: aligned right, as money is compared.
            let raw = table.stdout.split(separator: "\n")
            let end = { (line: Substring, text: String) in line.range(of: text).map { line.distance(from: line.startIndex, to: $0.upperBound) } }
            try #require(raw.count >= 2, "\(table.stdout)")
            #expect(end(raw[1], "4.99 USD") == end(raw[0], "GRANTED AMOUNT"), "\(table.stdout)")
            // No anomaly: a table says so in words, not a header alone.
            let none = try await LedgerBinary.run(["anomalies", "--older-than", "0s"], databaseURL: url)
            #expect(none.status == 0 && none.stdout == "no anomalies older than 0 s\n", "\(none.stdout)")
            let json = try await LedgerBinary.run(["anomalies", "--older-than", "0s", "--json"], databaseURL: url)
            #expect(json.status == 0 && json.stdout == "{\"anomalies\":[]}\n", "\(json.stdout)")
            let bad = try await LedgerBinary.run(["report", "revenue", "--from", "yesterday", "--to", today], databaseURL: url)
            #expect(bad.status != 0 && bad.stderr.contains("--from"))
        }
    }

    /// One grammar for periods on every finance command: a date (the whole day) or an RFC 3339 time, both ends
    /// included. A time bounds the period to the instant, even inside one day.
    @Test func periodsAreDatesOrRFC3339TimesOnEveryFinanceCommand() async throws {
        try await TestDatabase.withURL { url, client in
            let before = Date().addingTimeInterval(-1)
            try await recordHappyOrders(1, on: Ledger(client: client))
            let after = Date().addingTimeInterval(1)
            let today = String(RFC3339.format(Date()).prefix(10))
            func granted(_ from: String, _ to: String) async throws -> String {
                let csv = try await LedgerBinary.run(["report", "revenue", "--from", from, "--to", to, "--csv"], databaseURL: url)
                #expect(csv.status == 0, "\(csv.stderr)")
                return try csv.stdout.split(separator: "\n").dropFirst().first.map { line in
                    let fields = line.split(separator: ",")
                    try #require(fields.count > 2, "\(csv.stdout)")
                    return String(fields[2])
                } ?? "none"
            }
            #expect(try await granted(RFC3339.format(before), RFC3339.format(after)) == "1")
            #expect(try await granted(today, RFC3339.format(after)) == "1", "a date and a time in one period")
            #expect(try await granted(RFC3339.format(after), today) == "none", "the grant was before the period began")
            #expect(try await granted(today, RFC3339.format(before)) == "none", "--to a time ends the period there")

            let file = FileManager.default.temporaryDirectory.appendingPathComponent("period-\(UUID()).csv")
            try Data("transaction_id,product_id,amount_minor,currency,status,occurred_at\n".utf8).write(to: file)
            defer { try? FileManager.default.removeItem(at: file) }
            let reconcile = { (from: String, to: String) in
                try await LedgerBinary.run(
                    ["reconcile", file.path, "--provider", "app_store", "--from", from, "--to", to, "--csv"], databaseURL: url)
            }
            let inPeriod = try await reconcile(RFC3339.format(before), RFC3339.format(after))
            #expect(inPeriod.status == 1 && inPeriod.stdout.contains("missing_at_provider"), "\(inPeriod.stdout)\(inPeriod.stderr)")
            let outOfPeriod = try await reconcile(RFC3339.format(after), RFC3339.format(after.addingTimeInterval(60)))
            #expect(outOfPeriod.status == 0, "nothing granted in that minute: \(outOfPeriod.stdout)\(outOfPeriod.stderr)")

            for command in [["report", "revenue"], ["reconcile", file.path, "--provider", "app_store"]] {
                let bad = try await LedgerBinary.run(command + ["--from", "2026-11-01T08:00", "--to", today], databaseURL: url)
                #expect(bad.status == 64 && bad.stderr.contains("--from must be a date (YYYY-MM-DD, the whole day) or an RFC 3339 time"),
                        "\(command): \(bad.stderr)")
                // A reversed period is a usage error like any other (it exited 1, as if the ledger had found something).
                let reversed = try await LedgerBinary.run(command + ["--from", today, "--to", "2020-01-01"], databaseURL: url)
                #expect(reversed.status == 64 && reversed.stderr.contains("--from must not be after --to"), "\(command): \(reversed.stderr)")
                // With the usage of the command given, not `ledger <subcommand>`.
                #expect(reversed.stderr.contains("Usage: ledger \(command[0]) "), "\(reversed.stderr)")
            }
            // A providers file that is not there is a configuration error (78), naming the file.
            let missing = try await LedgerBinary.run(["verify", "--signatures", "--providers-config", "/nonexistent/providers.json"], databaseURL: url)
            #expect(missing.status == 78 && missing.stderr.contains("/nonexistent/providers.json: no such file"), "\(missing.status) \(missing.stderr)")
        }
    }

    /// `--group-by product,product` once crashed like the API did. The CLI refuses a repeated or empty name with the
    /// API's words, exits non-zero, and never traps (a trap prints "Fatal error" and no such message).
    @Test func repeatedOrEmptyNamesAreRefusedWithTheAPIsWords() async throws {
        try await TestDatabase.withURL { url, client in
            try await recordHappyOrders(1, on: Ledger(client: client))
            let today = String(RFC3339.format(Date()).prefix(10))
            let revenue = ["report", "revenue", "--from", today, "--to", today]
            let cases: [(arguments: [String], words: String)] = [
                (revenue + ["--group-by", "product,product"], "--group-by: product is named more than once"),
                (revenue + ["--group-by", "day,currency,day"], "--group-by: day is named more than once"),
                (revenue + ["--group-by", "day,,product"], "--group-by: a name is empty"),
                (revenue + ["--group-by", "day,"], "--group-by: a name is empty"),
                (["anomalies", "--kind", "lost_order,lost_order"], "--kind: lost_order is named more than once"),
                (["anomalies", "--kind", ",lost_order"], "--kind: a name is empty"),
            ]
            for (arguments, words) in cases {
                let outcome = try await LedgerBinary.run(arguments, databaseURL: url)
                #expect(outcome.status != 0, "\(arguments)")
                #expect(outcome.stderr.contains(words), "\(arguments): \(outcome.stderr.suffix(400))")
                #expect(!outcome.stderr.contains("Fatal error") && outcome.stdout.isEmpty, "\(arguments): \(outcome.stderr.suffix(400))")
            }
            let fine = try await LedgerBinary.run(revenue + ["--group-by", "product,day", "--csv"], databaseURL: url)
            #expect(fine.status == 0, "\(fine.stderr)")
            #expect(fine.stdout.split(separator: "\n").first == "product,day,currency,granted,granted_amount_minor,refunded,refunded_amount_minor,net_minor")
            #expect(fine.stdout.split(separator: "\n").dropFirst().first == "gems.100,\(today),USD,1,499,0,0,499")
        }
    }

    /// A provider file whose amounts add up past Int64 once trapped while summing: now a clear error, exit non-zero.
    @Test func aProviderFileWhoseAmountsOverflowIsRefusedNotATrap() async throws {
        try await TestDatabase.withURL { url, _ in
            let today = String(RFC3339.format(Date()).prefix(10))
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("provider-\(UUID().uuidString).csv")
            defer { try? FileManager.default.removeItem(at: file) }
            try Data(("transaction_id,product_id,amount_minor,currency,status,occurred_at\n"
                + "px-1,gems.100,\(Int64.max),USD,paid,\(today)T10:00:00Z\npx-2,gems.100,1,USD,paid,\(today)T10:00:00Z\n").utf8)
                .write(to: file)
            let outcome = try await LedgerBinary.run(
                ["reconcile", file.path, "--provider", "app_store", "--from", today, "--to", today], databaseURL: url)
            #expect(outcome.status != 0)
            #expect(outcome.stderr.contains("amounts in USD add up past 9223372036854775807"), "\(outcome.stderr.suffix(400))")
            #expect(!outcome.stderr.contains("Fatal error"), "\(outcome.stderr.suffix(400))")
        }
    }
}
