import Foundation
import LedgerCore
import Testing

/// Which purchase of an older app's receipt is an order's (`ReceiptPurchaseChoice`), and how the others are kept.
@Suite("A receipt listing several purchases: each order its own")
struct ReceiptPurchaseChoiceTests {
    static func purchase(_ id: String, _ product: String = "gems.100", at minute: Int?) -> ReceiptPurchase {
        ReceiptPurchase(
            transactionId: id, originalTransactionId: id, productId: product,
            purchasedAt: minute.map { Date(timeIntervalSince1970: 1_800_000_000 + Double($0) * 60) })
    }

    static let later = purchase("t-later", at: 5)
    static let coins = purchase("t-coins", "coins.50", at: 0)
    static let earlier = purchase("t-earlier", at: 1)
    static let undated = purchase("t-undated", at: nil)
    static let listed = [later, coins, undated, earlier]

    func choose(_ purchases: [ReceiptPurchase] = listed, own: String? = nil, bound: [String: String] = [:]) -> ReceiptPurchaseChoice {
        ReceiptPurchaseChoice.choose(among: purchases, forOrder: "order-a", productId: "gems.100", transactionId: own, boundTo: bound)
    }

    @Test func theEarliestPurchaseOfTheProductNoOtherOrderHoldsAndEveryOtherKept() {
        #expect(choose() == .chosen(Self.earlier, others: [Self.later, Self.coins, Self.undated]))
        #expect(choose(bound: ["t-earlier": "order-b"]) == .chosen(Self.later, others: [Self.coins, Self.undated, Self.earlier]))
        // Undated purchases come after dated ones; between them, receipt order.
        #expect(choose(bound: ["t-earlier": "order-b", "t-later": "order-c"])
            == .chosen(Self.undated, others: [Self.later, Self.coins, Self.earlier]))
        // A transaction listed twice is one purchase.
        #expect(choose([Self.earlier, Self.earlier, Self.coins]) == .chosen(Self.earlier, others: [Self.coins]))
    }

    @Test func theOrdersOwnTransactionIsChosenAgainSoARetryIsTheSameEvent() {
        #expect(choose(own: "t-later", bound: ["t-later": "order-a"]) == .chosen(Self.later, others: [Self.coins, Self.undated, Self.earlier]))
        #expect(choose(bound: ["t-later": "order-a"]) == .chosen(Self.earlier, others: [Self.later, Self.coins, Self.undated]),
                "bound to this order counts as free; the earliest still wins")
    }

    @Test func noFreePurchaseOfTheProductChoosesNone() {
        #expect(choose([Self.coins]) == .noPurchaseOfProduct(productId: "gems.100", listed: [Self.coins]))
        let taken = ["t-later": "order-b", "t-earlier": "order-c", "t-undated": "order-d", "t-coins": "order-e"]
        #expect(choose(bound: taken)
            == .allBoundElsewhere(productId: "gems.100", boundTo: ["t-later": "order-b", "t-earlier": "order-c", "t-undated": "order-d"]))
    }

    /// The others are event data: kept to the millisecond and read back as written; a list a client could spoil
    /// (the same transaction twice, an id outside the rules) is refused naming the field.
    @Test func otherPurchasesReadBackAsStoredAndBadListsAreRefused() throws {
        let receipt = OrderEvent.receiptReceived(ReceiptReceived(transactionId: "t-earlier", otherPurchases: [Self.later, Self.undated]))
        #expect(try OrderEvent(type: "receipt.received", data: receipt.data) == receipt)
        #expect(try OrderEvent(storedType: "receipt.received", data: receipt.data) == receipt)
        func refusal(_ list: JSONValue) -> String? {
            do throws(EventValidationError) {
                _ = try OrderEvent(type: "receipt.received", data: ["transactionId": "t-1", "otherPurchases": list])
                return nil
            } catch { return error.field }
        }
        let one: JSONValue = ["transactionId": "t-2", "originalTransactionId": "t-2", "productId": "p"]
        #expect(refusal([one, one]) == "data.otherPurchases[1].transactionId")
        #expect(refusal([["transactionId": "t 2", "originalTransactionId": "t-2", "productId": "p"]]) == "data.otherPurchases[0].transactionId")
        #expect(refusal([]) == "data.otherPurchases")
        #expect(refusal(.array(Array(repeating: one, count: 1001))) == "data.otherPurchases")
    }
}
