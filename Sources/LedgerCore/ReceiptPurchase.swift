import Foundation

/// One purchase an older app's App Store receipt lists (an `in_app` entry), as the ledger read it from the receipt.
/// Not a fact Apple signed: the receipt's signature is not checked (`AppReceipt`), so a purchase read here is a
/// question to put to Apple, never a payment the ledger believes.
public struct ReceiptPurchase: Sendable, Hashable {
    public var transactionId: String
    public var originalTransactionId: String
    public var productId: String
    /// Kept to the millisecond (the init rounds down), so the purchase survives a trip through its stored data.
    public var purchasedAt: Date?

    public init(transactionId: String, originalTransactionId: String, productId: String, purchasedAt: Date?) {
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.productId = productId
        self.purchasedAt = purchasedAt.map { Date(timeIntervalSince1970: ($0.timeIntervalSince1970 * 1000).rounded(.down) / 1000) }
    }

    /// The most purchases one `receipt.received` lists: more than a receipt of `receipt`'s 64 KiB can hold.
    public static let maximumListed = 1000

    /// As kept in `receipt.received`'s `otherPurchases`.
    public var json: JSONValue {
        var members: [String: JSONValue] = [
            "transactionId": .string(transactionId), "originalTransactionId": .string(originalTransactionId),
            "productId": .string(productId),
        ]
        members["purchasedAt"] = purchasedAt.map { .string(EventTime.format($0)) }
        return .object(members)
    }
}

extension DataFields {
    private static let receiptPurchaseFieldNames = ["transactionId", "originalTransactionId", "productId", "purchasedAt"]

    /// An array of `{transactionId, originalTransactionId, productId, purchasedAt?}`, each transaction once.
    func receiptPurchases(_ key: String) throws(EventValidationError) -> [ReceiptPurchase] {
        guard let value = value(key) else { return [] }
        guard case .array(let elements) = value, (1...ReceiptPurchase.maximumListed).contains(elements.count) else {
            throw refuse(key, "must be an array of 1 to \(ReceiptPurchase.maximumListed) purchases")
        }
        var purchases: [ReceiptPurchase] = []
        var seen: Set<String> = []
        for (index, element) in elements.enumerated() {
            let fields = try DataFields(
                element, path: "\(name(key))[\(index)]", owner: "a receipt's purchase", allowing: Self.receiptPurchaseFieldNames, rules: rules)
            let purchase = ReceiptPurchase(
                transactionId: try fields.required("transactionId", fields.id),
                originalTransactionId: try fields.required("originalTransactionId", fields.id),
                productId: try fields.required("productId", fields.id),
                purchasedAt: try fields.time("purchasedAt"))
            guard seen.insert(purchase.transactionId).inserted else {
                throw fields.refuse("transactionId", "names a transaction listed before: each purchase is listed once")
            }
            purchases.append(purchase)
        }
        return purchases
    }
}
