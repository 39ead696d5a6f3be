import Foundation
import LedgerCore
@testable import LedgerPostgres
import LedgerTestSupport
import Testing

@Suite("CLI: a receipt's purchases no order holds, listed for finance")
struct UnclaimedPurchaseCommandTests {
    /// An order recorded the receipt of an older app with two other purchases: one another order holds, one nobody
    /// does. `ledger anomalies --kind unclaimed_purchase` lists only the latter, with the order whose receipt listed it.
    @Test func anomaliesListTheReceiptsPurchasesNoOrderHolds() async throws {
        try await TestDatabase.withURL { url, client in
            let ledger = Ledger(client: client)
            let metadata = EventMetadata(actor: "test-suite")
            for (orderId, transactionId) in [("order-a", "3000000000000001"), ("order-b", "3000000000000002")] {
                _ = try await ledger.record(orderId: orderId, events: [
                    Submission(eventId: UUID(), type: "order.created", data: [
                        "accountId": "acct-1", "productId": "gems.100", "amount": ["value": 499, "currency": "USD"], "provider": "app_store",
                    ]),
                    Submission(eventId: UUID(), type: "receipt.received", data: [
                        "transactionId": .string(transactionId), "receiptSha256": .string(String(repeating: "ab", count: 32)),
                        "otherPurchases": orderId == "order-a" ? [
                            ["transactionId": "3000000000000002", "originalTransactionId": "3000000000000002", "productId": "gems.100"],
                            ["transactionId": "3000000000000003", "originalTransactionId": "3000000000000003", "productId": "coins.50",
                             "purchasedAt": "2026-11-20T09:00:00Z"],
                        ] : .null,
                    ]),
                ], metadata: metadata)
            }
            let listed = try await LedgerBinary.run(["anomalies", "--kind", "unclaimed_purchase", "--older-than", "0s", "--json"], databaseURL: url)
            #expect(listed.status == 0, "\(listed.stderr)")
            let anomalies = try JSONValue(parsing: Array(listed.stdout.utf8))["anomalies"]?.elements ?? []
            #expect(anomalies.count == 1, "\(listed.stdout)")
            #expect(anomalies.first?["orderId"] == "order-a" && anomalies.first?["kind"] == "unclaimed_purchase")
            guard case .string(let detail)? = anomalies.first?["detail"] else { Issue.record("no detail: \(listed.stdout)"); return }
            #expect(detail.contains("3000000000000003") && detail.contains("coins.50") && detail.contains("2026-11-20T09:00:00"), "\(detail)")
            let table = try await LedgerBinary.run(["anomalies", "--kind", "unclaimed_purchase", "--older-than", "0s"], databaseURL: url)
            #expect(table.status == 0 && table.stdout.contains("3000000000000003"), "\(table.stdout) \(table.stderr)")
        }
    }
}
