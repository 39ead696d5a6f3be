import Foundation

/// Why the domain refused a well-formed event: the order's rules, not the request's shape. Each refusal says
/// what was expected, so a client (or support) can tell a harmless retry from a real conflict.
public enum Refusal: Error, Sendable, Hashable {
    case orderExists(orderId: String)
    /// `state` nil: the order does not exist yet.
    case invalidTransition(state: OrderState?, event: EventType, allowed: [EventType])
    case transactionBoundElsewhere(transactionId: String, orderId: String)
    case transactionMismatch(expected: String?, actual: String)
    case productMismatch(expected: String, actual: String)
    case environmentMismatch(expected: PurchaseEnvironment, actual: PurchaseEnvironment)
    case accountMismatch(expected: String, actual: String)
    /// The provider signed the purchase for another `appAccountToken` than the order's: bought for another order.
    case appAccountTokenMismatch(expected: UUID, actual: UUID)
    case alreadyGranted(transactionId: String, orderId: String)
    /// The provider says another amount (or currency) was paid than the order's.
    case amountMismatch(expected: Money, actual: Money)
    /// The provider stated a price that is not a whole, non-negative number of minor units: no order's amount.
    case priceNotInMinorUnits(expected: Money, actual: UnconvertedPrice)
    /// A refund of more than the order's amount, or in another currency.
    case refundExceedsPayment(paid: Money, refund: Money)

    public var code: String {
        switch self {
        case .orderExists: "order_exists"
        case .invalidTransition: "invalid_transition"
        case .transactionBoundElsewhere: "transaction_bound_elsewhere"
        case .transactionMismatch: "transaction_mismatch"
        case .productMismatch: "product_mismatch"
        case .environmentMismatch: "environment_mismatch"
        case .accountMismatch, .appAccountTokenMismatch: "account_mismatch"
        case .alreadyGranted: "already_granted"
        case .amountMismatch, .priceNotInMinorUnits, .refundExceedsPayment: "amount_mismatch"
        }
    }

    public var message: String {
        switch self {
        case .orderExists(let orderId):
            "order \(orderId) already exists"
        case .invalidTransition(nil, let event, _):
            "the order does not exist yet, so \(event.rawValue) is not accepted; the first event must be order.created"
        case .invalidTransition(let state?, let event, let allowed):
            "\(event.rawValue) is not accepted in state \(state.rawValue)"
                + (allowed.isEmpty ? "; no further events are accepted"
                    : "; accepted: " + allowed.map(\.rawValue).joined(separator: ", "))
        case .transactionBoundElsewhere(let transactionId, let orderId):
            "transaction \(transactionId) already belongs to order \(orderId)"
        case .transactionMismatch(nil, let actual):
            "transaction \(actual) is not this order's: the order has no transaction yet"
        case .transactionMismatch(let expected?, let actual):
            "transaction \(actual) is not this order's transaction \(expected)"
        case .productMismatch(let expected, let actual):
            "the receipt is for product \(actual), but the order is for \(expected)"
        case .environmentMismatch(let expected, let actual):
            "the receipt is from the \(actual.rawValue) environment, but the order is for \(expected.rawValue)"
        case .accountMismatch(let expected, let actual):
            "the grant is for account \(actual), but the order belongs to account \(expected)"
        case .appAccountTokenMismatch(let expected, let actual):
            "the provider signed the purchase for appAccountToken \(actual.lowercasedText), but the order's is \(expected.lowercasedText)"
        case .alreadyGranted(let transactionId, let orderId):
            "transaction \(transactionId) was already granted by order \(orderId)"
        case .amountMismatch(let expected, let actual):
            "the provider says \(actual.formatted) was paid, but the order is for \(expected.formatted)"
        case .priceNotInMinorUnits(let expected, let actual):
            "the provider's price of \(actual) is not a whole, non-negative number of \(actual.currency) minor units, "
                + "so it is not the order's \(expected.formatted)"
        case .refundExceedsPayment(let paid, let refund):
            "a refund of \(refund.value) \(refund.currency) minor units is not within the \(paid.value) \(paid.currency) paid: "
                + "a refund is at most the order's amount, in its currency"
        }
    }

    /// The refusal's facts as JSON, for the API's error `details`.
    public var details: [String: JSONValue] {
        switch self {
        case .orderExists(let orderId):
            ["orderId": .string(orderId)]
        case .invalidTransition(let state, let event, let allowed):
            [
                "state": state.map { .string($0.rawValue) } ?? .null,
                "event": .string(event.rawValue),
                "allowed": .array(allowed.map { .string($0.rawValue) }),
            ]
        case .transactionBoundElsewhere(let transactionId, let orderId), .alreadyGranted(let transactionId, let orderId):
            ["transactionId": .string(transactionId), "orderId": .string(orderId)]
        case .transactionMismatch(let expected, let actual):
            ["expected": expected.map(JSONValue.string) ?? .null, "actual": .string(actual)]
        case .productMismatch(let expected, let actual), .accountMismatch(let expected, let actual):
            ["expected": .string(expected), "actual": .string(actual)]
        case .environmentMismatch(let expected, let actual):
            ["expected": .string(expected.rawValue), "actual": .string(actual.rawValue)]
        case .appAccountTokenMismatch(let expected, let actual):
            ["expected": .string(expected.lowercasedText), "actual": .string(actual.lowercasedText)]
        case .amountMismatch(let expected, let actual):
            ["expected": .money(expected), "actual": .money(actual)]
        case .priceNotInMinorUnits(let expected, let actual):
            ["expected": .money(expected), "actual": .unconvertedPrice(actual)]
        case .refundExceedsPayment(let paid, let refund):
            ["paid": .money(paid), "refund": .money(refund)]
        }
    }
}
