import Foundation
import LedgerCore
@testable import LedgerPostgres
import LedgerTestSupport
import Testing

/// `ledger report subscriptions`: the year of `SubscriptionYear` as a table (money as money), CSV (minor units) and
/// the API's JSON.
@Suite("CLI: ledger report subscriptions")
struct SubscriptionReportCommandTests {
    @Test func theRefundDayPrintsAsTableCSVAndJSON() async throws {
        try await TestDatabase.withURL { url, client in
            let ledger = Ledger(client: client)
            for event in SubscriptionYear.notifications {
                guard case .provider(_, let said) = event, let notificationId = said.notificationId else { continue }
                _ = try await ledger.recordSubscriptionNotification(
                    SubscriptionYear.id, event: event, notificationId: notificationId, provider: .appStore, requestId: nil)
            }
            let period = ["--from", "2026-11-14", "--to", "2026-11-15"]
            let table = try await LedgerBinary.run(["report", "subscriptions"] + period, databaseURL: url)
            #expect(table.status == 0, "\(table.stderr)")
            let lines = table.stdout.split(separator: "\n").map { $0.split(separator: " ", omittingEmptySubsequences: true) }
            #expect(lines.count == 3, "\(table.stdout)")
            #expect(lines.last == [
                "2026-11-15", "pro.premium", "USD", "0", "0.00", "USD", "0", "0", "0.00", "USD", "1", "5.00", "USD", "0", "0", "1",
            ], "\(table.stdout)")
            let csv = try await LedgerBinary.run(["report", "subscriptions", "--csv"] + period, databaseURL: url)
            #expect(csv.stdout.split(separator: "\n") == [
                "day,product,currency,active,mrr_minor,started,renewed,revenue_minor,refunds,refunded_minor,churned_voluntary,churned_billing,churned_other",
                "2026-11-14,pro.premium,USD,1,999,0,0,0,0,0,0,0,0",
                "2026-11-15,pro.premium,USD,0,0,0,0,0,1,500,0,0,1",
            ], "\(csv.stdout)")
            let json = try await LedgerBinary.run(["report", "subscriptions", "--json"] + period, databaseURL: url)
            let rows = try JSONValue(parsing: Array(json.stdout.utf8))["rows"]?.elements ?? []
            #expect(rows.map { $0["mrr"] } == [999, 0] && rows.last?["churned"]?["other"] == 1, "\(json.stdout)")
            let bad = try await LedgerBinary.run(["report", "subscriptions", "--from", "2026-11-15", "--to", "2026-11-14"], databaseURL: url)
            #expect(bad.status == 64 && bad.stderr.contains("--from"), "\(bad.stderr)")
        }
    }
}
