import Foundation
import LedgerCore
import LedgerPostgres
import LedgerProviders

/// `receipt.received` from an older app: the base64 App Store receipt (`data.receipt`) and no `transactionId`. The
/// transaction id is read from the receipt (`AppReceipt`: attribute 17, then 1703 and 1705), so the receipt is
/// recorded against the transaction it names and the recovery schedule asks Apple about that transaction (Get
/// Transaction Info) once it stays unverified. Nothing read from the receipt is believed: only Apple's signed answer
/// verifies the order.
///
/// Such a receipt lists every purchase the app has not finished: after two crashes, two purchases, and the app sends
/// the whole receipt with each of their orders. The order is given the purchase that is its own
/// (`ReceiptPurchaseChoice`: its own transaction, else the earliest purchase of its product no other order holds),
/// and the receipt's other purchases are kept on the event (`otherPurchases`), so finance lists those no order
/// claims (`unclaimed_purchase`). A receipt with no purchase of the order's product is refused (`409
/// product_mismatch`, naming what it lists), as is one whose purchases of it all belong to other orders (`409
/// transaction_bound_elsewhere`): either way it is not this order's receipt, and crediting another product's
/// purchase, or another order's, would be wrong; nothing is written. A receipt that lists none (a receipt refreshed
/// with `SKReceiptRefreshRequest`, or read before the purchase finished) is refused saying so: it proves nothing
/// either way, least of all "not paid".
enum LegacyReceipts {
    /// Each such `receipt.received` of `submissions` with the purchase that is `orderId`'s, read against the order
    /// (or the `order.created` before it in the batch) and the bindings of the receipt's transactions now.
    static func resolve(_ submissions: [Submission], orderId: String, ledger: Ledger) async throws -> [Submission] {
        var resolved = submissions
        for (index, submission) in submissions.enumerated() {
            guard submission.type == EventType.receiptReceived.rawValue, case .object(var data) = submission.data else { continue }
            let prefix = submissions.count == 1 ? "data" : "events[\(index)].data"
            guard data["otherPurchases"] ?? .null == .null else {
                throw APIError.invalidRequest(
                    field: prefix + ".otherPurchases",
                    "\(prefix).otherPurchases is the ledger's own reading of \(prefix).receipt; send the receipt, never the list")
            }
            guard data["transactionId"] ?? .null == .null, data["signedTransaction"] ?? .null == .null,
                  case .string(let receipt)? = data["receipt"]
            else { continue }
            let field = prefix + ".receipt"
            let purchases = try Self.purchases(in: receipt, field: field)
            let order = try await ledger.order(orderId)
            guard let productId = order?.productId ?? Self.createdProduct(in: submissions[..<index]) else {
                // As the ledger refuses any receipt before its order: there is no product to choose by.
                throw Refusal.invalidTransition(state: nil, event: .receiptReceived, allowed: [.orderCreated])
            }
            let bound = try await ledger.boundOrders(of: purchases.map(\.transactionId))
            switch ReceiptPurchaseChoice.choose(
                among: purchases, forOrder: orderId, productId: productId, transactionId: order?.transactionId, boundTo: bound
            ) {
            case .chosen(let purchase, let others):
                data["transactionId"] = .string(purchase.transactionId)
                if purchase.originalTransactionId != purchase.transactionId {
                    data["originalTransactionId"] = .string(purchase.originalTransactionId)
                }
                if !others.isEmpty {
                    data["otherPurchases"] = .array(others.map(\.json))
                }
                resolved[index] = Submission(
                    eventId: submission.eventId, type: submission.type, data: .object(data), occurredAt: submission.occurredAt)
            case .noPurchaseOfProduct(let productId, let listed):
                throw APIError(.conflict, "product_mismatch",
                    "\(field) lists no purchase of \(productId), the order's product: it lists "
                        + Self.named(listed.map { "\($0.productId) (\($0.transactionId))" })
                        + "; send it with the order each purchase was bought for",
                    details: ["field": .string(field), "expected": .string(productId)])
            case .allBoundElsewhere(let productId, let boundTo):
                throw APIError(.conflict, "transaction_bound_elsewhere",
                    "every purchase of \(productId) that \(field) lists already belongs to another order: "
                        + Self.named(boundTo.sorted { $0.key < $1.key }.map { "\($0.key) to order \($0.value)" }),
                    details: ["field": .string(field)])
            }
        }
        return resolved
    }

    /// Whether a refusal of the append may be a race the choice lost (another order took the chosen purchase between
    /// the read and the write): then the route reads and chooses again.
    static func mayChooseAgain(after refusal: Refusal, _ submissions: [Submission]) -> Bool {
        guard case .transactionBoundElsewhere = refusal else { return false }
        return submissions.contains { submission in
            submission.type == EventType.receiptReceived.rawValue && submission.data["receipt"] != nil
                && submission.data["transactionId"] ?? .null == .null && submission.data["signedTransaction"] ?? .null == .null
        }
    }

    /// The receipt's purchases, in receipt order.
    static func purchases(in receipt: String, field: String) throws -> [ReceiptPurchase] {
        let parsed: AppReceipt
        do throws(AppReceiptError) {
            parsed = try AppReceipt.parse(base64: receipt)
        } catch .noInAppPurchases {
            throw APIError.invalidRequest(field: field, "\(field): \(AppReceiptError.noInAppPurchases); give the transactionId the app's purchase returned")
        } catch {
            throw APIError.invalidRequest(field: field, "\(field) is not an App Store receipt the ledger can read (\(error)); give transactionId")
        }
        // Read from the receipt, so held to the id rules before they become event data.
        for purchase in parsed.inAppPurchases {
            for (name, value) in [("product", purchase.productId), ("transaction", purchase.transactionId),
                                  ("original transaction", purchase.originalTransactionId)] where !Identifier.isValid(value) {
                throw APIError.invalidRequest(field: field, "\(field) lists a \(name) id the ledger cannot keep (\(value.prefix(64))): ids \(Identifier.rule)")
            }
        }
        return parsed.inAppPurchases.map { purchase in
            ReceiptPurchase(
                transactionId: purchase.transactionId, originalTransactionId: purchase.originalTransactionId,
                productId: purchase.productId, purchasedAt: purchase.purchaseDate)
        }
    }

    /// The product of an `order.created` earlier in the batch (the order is created by the same request).
    static func createdProduct(in submissions: ArraySlice<Submission>) -> String? {
        for submission in submissions where submission.type == EventType.orderCreated.rawValue {
            if case .string(let productId)? = submission.data["productId"] { return productId }
        }
        return nil
    }

    /// Up to ten names, then how many more.
    static func named(_ names: [String]) -> String {
        names.prefix(10).joined(separator: ", ") + (names.count > 10 ? " and \(names.count - 10) more" : "")
    }
}
