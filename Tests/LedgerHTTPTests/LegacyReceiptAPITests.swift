import Foundation
import HTTPTypes
import LedgerCore
import ProviderTestSupport
import Testing

@Suite("API: an older app's receipt listing several purchases: each order its own, the rest listed for finance")
struct LegacyReceiptAPITests {
    /// Three purchases, listed out of date order: two of the orders' product (the earlier second) and one of another.
    static let later = ReceiptTestKit.Purchase(
        quantity: 1, productId: "gems.100", transactionId: "1000000000000012", originalTransactionId: "1000000000000012",
        purchaseDate: "2026-11-20T10:05:00Z")
    static let coins = ReceiptTestKit.Purchase(
        quantity: 1, productId: "coins.50", transactionId: "1000000000000013", originalTransactionId: "1000000000000013",
        purchaseDate: "2026-11-20T09:00:00Z")
    static let earlier = ReceiptTestKit.Purchase(
        quantity: 1, productId: "gems.100", transactionId: "1000000000000011", originalTransactionId: "1000000000000011",
        purchaseDate: "2026-11-20T10:00:00Z")

    static func receipt(_ purchases: [ReceiptTestKit.Purchase]) throws -> String {
        Data(try ReceiptTestKit.receipt(payload: ReceiptTestKit.payload(purchases: purchases))).base64EncodedString()
    }

    static func event(_ receipt: String, id: UUID = UUID()) -> JSONValue {
        ["eventId": .string(id.uuidString), "type": "receipt.received", "data": ["receipt": .string(receipt)]]
    }

    /// After two crashes the app sends its whole receipt with each order. The first order takes the earliest purchase
    /// of its product, the second the next; the purchase of another product is kept and listed for finance until an
    /// order of that product takes it. Sent again, the receipt credits nothing twice: a retry replays, a new event
    /// keeps the order's own purchase, and an order with no free purchase left is refused.
    @Test func eachOrderTakesItsOwnPurchaseAndTheRestAreListedForFinance() async throws {
        try await API.run { api in
            for order in ["order-a", "order-b", "order-c"] { try await api.createOrder(order) }
            let receipt = try Self.receipt([Self.later, Self.coins, Self.earlier])
            let firstId = UUID()

            let first = try await api.post("order-a", Self.event(receipt, id: firstId))
            #expect(first.status == .created, "\(first.bodyText)")
            #expect(try await api.ledger.order("order-a")?.transactionId == Self.earlier.transactionId)
            let kept = try #require(try await api.ledger.history("order-a")?.entries.last?.event)
            #expect(kept.data["receiptSha256"] != nil && kept.data["receipt"] == nil)
            #expect(kept.data["otherPurchases"]?.elements.map { $0["transactionId"] } == [
                .string(Self.later.transactionId), .string(Self.coins.transactionId),
            ], "the receipt's other purchases are kept on the event, in receipt order")

            let second = try await api.post("order-b", Self.event(receipt))
            #expect(second.status == .created, "\(second.bodyText)")
            #expect(try await api.ledger.order("order-b")?.transactionId == Self.later.transactionId)

            // Sent twice: the retry is a replay; a new event for order-a keeps its own purchase.
            let retry = try await api.post("order-a", Self.event(receipt, id: firstId))
            #expect(retry.status == .ok && retry.headers[HTTPField.Name("Idempotent-Replay")!] == "true", "\(retry.bodyText)")
            let again = try await api.post("order-a", Self.event(receipt))
            #expect(again.status == .created, "\(again.bodyText)")
            #expect(try await api.ledger.order("order-a")?.transactionId == Self.earlier.transactionId)
            // No purchase of gems.100 is left for order-c: refused, nothing written.
            let none = try await api.post("order-c", Self.event(receipt))
            #expect(none.status == .conflict && none.errorCode == "transaction_bound_elsewhere", "\(none.bodyText)")
            #expect(none.json["error"]?["details"]?["field"] == "data.receipt")
            #expect(try await api.state("order-c") == "payment_queued")

            let listed = try await api.anomalies("unclaimed_purchase")
            #expect(listed.count == 1 && listed.first?["orderId"] == "order-a", "\(listed)")
            #expect(listed.first?["detail"]?.stringValue?.contains(Self.coins.transactionId) == true, "\(listed)")
            let credited = try await api.get("/v1/transactions/\(Self.earlier.transactionId)")
            #expect(credited.json["orderId"] == "order-a")
            #expect(try await api.get("/v1/transactions/\(Self.later.transactionId)").json["orderId"] == "order-b")

            // An order of the unclaimed purchase's product takes it, and finance no longer lists it.
            try await api.createOrder("order-d", productId: "coins.50")
            let coins = try await api.post("order-d", Self.event(receipt))
            #expect(coins.status == .created, "\(coins.bodyText)")
            #expect(try await api.ledger.order("order-d")?.transactionId == Self.coins.transactionId)
            #expect(try await api.anomalies("unclaimed_purchase").isEmpty)
            #expect(try await api.database.operations.verify().passed)
        }
    }

    /// Two orders sending one receipt at the same moment may choose the same purchase; the one whose append loses
    /// chooses again and takes the other. Neither is refused, and no purchase goes to both.
    @Test func twoOrdersSendingOneReceiptAtOnceEachTakeTheirOwn() async throws {
        try await API.run { api in
            for round in 0..<4 {
                let (a, b) = ("race-\(round)-a", "race-\(round)-b")
                try await api.createOrder(a)
                try await api.createOrder(b)
                let receipt = try Self.receipt([
                    ReceiptTestKit.Purchase(quantity: 1, productId: "gems.100", transactionId: "20000000000\(round)0001",
                                            originalTransactionId: "20000000000\(round)0001", purchaseDate: "2026-11-20T10:00:00Z"),
                    ReceiptTestKit.Purchase(quantity: 1, productId: "gems.100", transactionId: "20000000000\(round)0002",
                                            originalTransactionId: "20000000000\(round)0002", purchaseDate: "2026-11-20T10:01:00Z"),
                ])
                async let first = api.post(a, Self.event(receipt))
                async let second = api.post(b, Self.event(receipt))
                let answers = try await [first, second]
                #expect(answers.map(\.status) == [.created, .created], "\(answers.map(\.bodyText))")
                let taken = try await [api.ledger.order(a)?.transactionId, api.ledger.order(b)?.transactionId]
                #expect(Set(taken.compactMap { $0 }).count == 2, "\(taken)")
            }
            #expect(try await api.anomalies("unclaimed_purchase").isEmpty)
        }
    }

    /// A receipt with no purchase of the order's product is not this order's receipt: crediting another product's
    /// purchase would be wrong. Refused with what it lists, nothing written, nothing listed: the app has not finished
    /// those purchases, so StoreKit delivers them again, with the orders they were bought for.
    @Test func aReceiptWithNoPurchaseOfTheOrdersProductIsRefusedSayingWhatItLists() async throws {
        try await API.run { api in
            try await api.createOrder("order-1")
            let answer = try await api.post("order-1", Self.event(try Self.receipt([Self.coins, ReceiptTestKit.first])))
            #expect(answer.status == .conflict && answer.errorCode == "product_mismatch", "\(answer.bodyText)")
            #expect(answer.json["error"]?["details"]?["field"] == "data.receipt")
            #expect(answer.bodyText.contains("coins.50 (1000000000000013)") && answer.bodyText.contains("com.example.coins"))
            #expect(try await api.eventTypes("order-1") == ["order.created", "payment.queued"])
            #expect(try await api.anomalies("unclaimed_purchase").isEmpty)

            // The list is the ledger's own reading of the receipt: a client cannot give it.
            let forged = try await api.post("order-1", [
                "eventId": .string(UUID().uuidString), "type": "receipt.received",
                "data": ["transactionId": "1000000000000099", "otherPurchases": [["transactionId": "1", "originalTransactionId": "1", "productId": "x"]]],
            ])
            #expect(forged.status == .badRequest && forged.json["error"]?["details"]?["field"] == "data.otherPurchases", "\(forged.bodyText)")
        }
    }
}

extension JSONValue {
    var stringValue: String? { if case .string(let text) = self { text } else { nil } }
}
