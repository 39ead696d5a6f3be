import Foundation
import LedgerCore
@testable import LedgerPostgres
import LedgerTestSupport
import Testing

/// Rules only ever tighten for new events; an event written under looser ones can never be changed, so it must still
/// read back: amounts past `Money.maximumValue` (unbounded before) and texts within their length in graphemes but
/// not in Unicode scalars (how lengths were counted before).
@Suite("Stored events read back by the rules they were written under")
struct StoredEventRulesTests {
    @Test func eventsWrittenUnderLooserRulesStillReadBack() async throws {
        try await TestDatabase.withClient { client in
            let store = EventStore(client: client)
            let created: JSONValue = [
                "accountId": "acct-1", "productId": "gems.100", "quantity": 1, "provider": "app_store",
                "environment": "production", "amount": ["value": .int(Int64.max), "currency": "USD"],
            ]
            let receipt: JSONValue = ["transactionId": "tx-old", "source": "client"]
            let failed: JSONValue = ["code": .string("e" + String(repeating: "\u{301}", count: 100)), "retryable": true]
            #expect(throws: EventValidationError.self, "refused as a new event") { try OrderEvent(type: "order.created", data: created) }
            #expect(throws: EventValidationError.self, "refused as a new event") { try OrderEvent(type: "verification.failed", data: failed) }
            // Written straight to the store, as the ledger wrote them under the old rules.
            for (type, data) in [("order.created", created), ("receipt.received", receipt), ("verification.failed", failed)] {
                _ = try await store.append(to: "order-old", events: [NewEvent(eventId: UUID(), type: type, data: data)])
            }
            let history = try #require(try await Ledger(client: client).history("order-old"))
            #expect(history.entries.map(\.event.type) == ["order.created", "receipt.received", "verification.failed"])
            #expect(history.order?.amount.value == .max)
            #expect(history.order?.state == .verificationFailed)
        }
    }
}
