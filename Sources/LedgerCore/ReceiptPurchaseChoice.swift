import Foundation

/// Which purchase of an older app's receipt is an order's. Such a receipt lists every purchase the app has not
/// finished — after two crashes, two purchases of the same consumable, each bought for its own order — and the app
/// sends the whole receipt with each order. Each order is given its own purchase, and no purchase two orders:
///
/// 1. the order's own transaction, when it has one and the receipt lists it (a receipt sent again for the same order
///    chooses what it chose before, so a retry is the same event);
/// 2. else the purchases of the order's product that no other order holds, the earliest bought (receipt order between
///    equal or missing dates): the first order to send the receipt takes the first purchase, the next order the next;
/// 3. else none: no purchase of the order's product (`noPurchaseOfProduct`), or every one already another order's
///    (`allBoundElsewhere`).
///
/// Every other purchase the receipt lists is kept beside the chosen one (`others`), so finance sees those no order
/// claims: listed, never dropped, never credited by this order.
public enum ReceiptPurchaseChoice: Sendable, Hashable {
    case chosen(ReceiptPurchase, others: [ReceiptPurchase])
    /// The receipt lists no purchase of `productId`.
    case noPurchaseOfProduct(productId: String, listed: [ReceiptPurchase])
    /// Every purchase of `productId` in the receipt already belongs to another order (`boundTo`: transaction → order).
    case allBoundElsewhere(productId: String, boundTo: [String: String])

    /// - Parameters:
    ///   - purchases: the receipt's purchases in receipt order (a transaction listed twice counts once).
    ///   - boundTo: the order each of their transactions belongs to, for those that belong to one.
    public static func choose(
        among purchases: [ReceiptPurchase], forOrder orderId: String, productId: String, transactionId: String?,
        boundTo: [String: String]
    ) -> ReceiptPurchaseChoice {
        var seen: Set<String> = []
        let listed = purchases.filter { seen.insert($0.transactionId).inserted }
        func chosen(_ purchase: ReceiptPurchase) -> ReceiptPurchaseChoice {
            .chosen(purchase, others: listed.filter { $0.transactionId != purchase.transactionId })
        }
        if let transactionId, let own = listed.first(where: { $0.transactionId == transactionId }) {
            return chosen(own)
        }
        let ofProduct = listed.filter { $0.productId == productId }
        guard !ofProduct.isEmpty else { return .noPurchaseOfProduct(productId: productId, listed: listed) }
        let free = ofProduct.enumerated().filter { boundTo[$0.element.transactionId].map { $0 == orderId } ?? true }
        let earliest = free.min { left, right in
            let (a, b) = (left.element.purchasedAt ?? .distantFuture, right.element.purchasedAt ?? .distantFuture)
            return a != b ? a < b : left.offset < right.offset
        }
        guard let earliest else {
            return .allBoundElsewhere(productId: productId, boundTo: boundTo.filter { id, _ in ofProduct.contains { $0.transactionId == id } })
        }
        return chosen(earliest.element)
    }
}
