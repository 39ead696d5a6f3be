import Foundation
import LedgerCore
import LedgerHTTP
@testable import LedgerPostgres
import LedgerTestSupport
import Testing

/// `ledger history` and `ledger anomalies` print everything, reading a page at a time: page by page the output is
/// the whole.
@Suite("CLI: history and anomalies walk the pages")
struct PagedCommandTests {
    @Test func historyReadPageByPageIsTheWholeHistory() async throws {
        try await TestDatabase.withURL { url, client in
            let ledger = Ledger(client: client)
            try await recordLongOrder("long", failures: 17, on: ledger)  // 23 events
            let whole = try #require(try await ledger.history("long"))
            let json = try await LedgerBinary.run(["history", "long", "--json", "--page-size", "4"], databaseURL: url)
            #expect(json.status == 0, "\(json.stderr)")
            #expect(json.stdout == whole.json.canonicalJSON + "\n")

            try #require(whole.entries.count >= 10)
            let moment = whole.entries[9].event.recordedAt
            let past = try #require(try await ledger.history("long", asOf: moment))
            let pastJSON = try await LedgerBinary.run(
                ["history", "long", "--json", "--page-size", "3", "--as-of", RFC3339.format(moment)], databaseURL: url)
            #expect(pastJSON.stdout == past.json.canonicalJSON + "\n")

            // The table: the same lines (columns aligned per page), the header once, then the resulting order.
            let paged = try await LedgerBinary.run(["history", "long", "--page-size", "4"], databaseURL: url)
            let single = try await LedgerBinary.run(["history", "long"], databaseURL: url)
            #expect(paged.status == 0 && single.status == 0)
            let words = { (text: String) in text.split(separator: "\n", omittingEmptySubsequences: false).map { $0.split(separator: " ") } }
            #expect(words(paged.stdout) == words(single.stdout))
            #expect(single.stdout.components(separatedBy: "POSITION").count == 2)
            let lineCount = single.stdout.split(separator: "\n").count
            #expect(lineCount == 27, "the heading, the table's header and 23 events, the order's header and row")
        }
    }

    @Test func anomaliesReadPageByPageAreTheWholeList() async throws {
        try await TestDatabase.withURL { url, client in
            let ledger = Ledger(client: client)
            for n in 0..<5 {
                let lifecycle = Lifecycle()
                _ = try await ledger.record(
                    orderId: "stuck-\(n)", events: [lifecycle.created, lifecycle.queued], metadata: EventMetadata(actor: "test"))
            }
            let found = try await AnomalyFinder(client: client).find(kinds: [.stuckPayment], olderThan: .zero)
            #expect(found.count == 5)
            for format in ["--json", "--csv", nil] {
                let arguments = ["anomalies", "--kind", "stuck_payment", "--older-than", "0s"] + (format.map { [$0] } ?? [])
                let paged = try await LedgerBinary.run(arguments + ["--page-size", "2"], databaseURL: url)
                let single = try await LedgerBinary.run(arguments, databaseURL: url)
                #expect(paged.status == 0, "\(paged.stderr)")
                #expect(withoutAges(paged.stdout) == withoutAges(single.stdout), "\(format ?? "table")")
                #expect(paged.stdout.contains("stuck-4"))
            }
            let json = try await LedgerBinary.run(
                ["anomalies", "--kind", "stuck_payment", "--older-than", "0s", "--json", "--page-size", "2"], databaseURL: url)
            let listed = try JSONValue(parsing: Array(json.stdout.utf8))["anomalies"]?.elements ?? []
            #expect(listed.map { $0["orderId"] } == found.map { .string($0.orderId) })
        }
    }

    @Test func serveRefusesServerLimitsOutOfRange() async throws {
        for arguments in [["--statement-timeout=-1"], ["--lock-timeout", "86401"], ["--idle-in-transaction-timeout", "soon"]] {
            let outcome = try await LedgerBinary.run(["serve"] + arguments, databaseURL: "postgres://nobody@127.0.0.1:1/none")
            #expect(outcome.status != 0)
            #expect(outcome.stderr.contains(arguments[0].split(separator: "=")[0]), "\(outcome.stderr)")
        }
    }

    /// The output with every age (`12s`, `"ageSeconds":12`) blanked: ages change between two runs.
    func withoutAges(_ text: String) -> String {
        text.replacingOccurrences(of: #""ageSeconds":[0-9]+"#, with: "", options: .regularExpression)
            .replacingOccurrences(of: #"(^|[ ,])[0-9]+s([ ,]|$)"#, with: "$1$2", options: [.regularExpression])
            .split(separator: "\n").map { $0.split(separator: " ").joined(separator: " ") }.joined(separator: "\n")
    }
}
