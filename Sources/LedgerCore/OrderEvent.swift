import Foundation

/// One fact about an order, validated: what the decider judges and the projection folds.
public enum OrderEvent: Sendable, Hashable {
    case created(OrderCreated)
    case paymentQueued(PaymentQueued)
    case receiptReceived(ReceiptReceived)
    case receiptVerified(ReceiptVerified)
    case verificationFailed(VerificationFailed)
    case granted(OrderGranted)
    case finished(OrderFinished)
    case cancelled(OrderCancelled)
    case refunded(OrderRefunded)
    case refundReversed(RefundReversed)
    case providerNotified(ProviderNotified)

    public var type: EventType {
        switch self {
        case .created: .orderCreated
        case .paymentQueued: .paymentQueued
        case .receiptReceived: .receiptReceived
        case .receiptVerified: .receiptVerified
        case .verificationFailed: .verificationFailed
        case .granted: .orderGranted
        case .finished: .orderFinished
        case .cancelled: .orderCancelled
        case .refunded: .orderRefunded
        case .refundReversed: .refundReversed
        case .providerNotified: .providerNotified
        }
    }

    /// The provider transactionId the event names, if it names one: what the ledger looks up to keep one
    /// transaction to one order and one grant.
    public var transactionId: String? {
        switch self {
        case .receiptReceived(let receipt): receipt.transactionId
        case .receiptVerified(let verified): verified.transactionId
        case .granted(let grant): grant.transactionId
        case .refunded(let refund): refund.transactionId
        case .refundReversed(let reversal): reversal.transactionId
        // Evidence, not a claim: a provider's message binds nothing (what it leads to does, through its own events).
        case .created, .paymentQueued, .verificationFailed, .finished, .cancelled, .providerNotified: nil
        }
    }
}

/// The backend made an order for an account and a product at a known price.
public struct OrderCreated: Sendable, Hashable {
    public var accountId: String
    public var productId: String
    public var quantity: Int
    public var amount: Money
    public var provider: Provider
    public var environment: PurchaseEnvironment
    public var appAccountToken: UUID?

    public init(
        accountId: String, productId: String, quantity: Int = 1, amount: Money, provider: Provider,
        environment: PurchaseEnvironment = .production, appAccountToken: UUID? = nil
    ) {
        self.accountId = accountId
        self.productId = productId
        self.quantity = quantity
        self.amount = amount
        self.provider = provider
        self.environment = environment
        self.appAccountToken = appAccountToken
    }
}

/// The app handed the payment to the provider, tagged so the order can be found again after a crash.
public struct PaymentQueued: Sendable, Hashable {
    public var appAccountToken: UUID?
    public var applicationUsername: String?

    public init(appAccountToken: UUID? = nil, applicationUsername: String? = nil) {
        self.appAccountToken = appAccountToken
        self.applicationUsername = applicationUsername
    }
}

/// Where a receipt came from: the app, a provider's notification, our own polling, or a support agent.
public enum ReceiptSource: String, Sendable, Hashable, Codable, CaseIterable {
    case client, notification, poll, support
}

/// The user paid: a receipt naming the provider's transactionId reached the backend. Only the receipt's SHA-256
/// is kept — the receipt itself is the provider's to keep.
public struct ReceiptReceived: Sendable, Hashable {
    public var transactionId: String
    public var originalTransactionId: String?
    public var source: ReceiptSource
    public var submittedBy: String?
    /// 64 lower-case hex digits.
    public var receiptSha256: String?
    /// A StoreKit 2 signed transaction (JWS) the ledger verified before recording this receipt, kept verbatim so
    /// `ledger verify --signatures` can verify it again; the `receipt.verified` after it is the ledger's own.
    public var signedTransaction: String?
    /// The other purchases an older app's receipt listed beside this order's (`ReceiptPurchaseChoice`), as read from
    /// it: kept for finance, who lists those no order holds (`unclaimed_purchase`). Empty for any other receipt.
    public var otherPurchases: [ReceiptPurchase]

    public init(
        transactionId: String, originalTransactionId: String? = nil, source: ReceiptSource = .client,
        submittedBy: String? = nil, receiptSha256: String? = nil, signedTransaction: String? = nil,
        otherPurchases: [ReceiptPurchase] = []
    ) {
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.source = source
        self.submittedBy = submittedBy
        self.receiptSha256 = receiptSha256
        self.signedTransaction = signedTransaction
        self.otherPurchases = otherPurchases
    }
}

/// The provider confirmed the transaction: what was bought, how many, where, when, and (newer APIs) for how much.
public struct ReceiptVerified: Sendable, Hashable {
    public var transactionId: String
    public var productId: String
    public var quantity: Int
    public var environment: PurchaseEnvironment
    /// Kept to the millisecond (the init rounds down), so the event survives a trip through its stored data.
    public var purchasedAt: Date
    /// What the provider says was paid, in minor units; nil when it states no price (then nothing is compared) or
    /// when its price is not in whole minor units (then `unconvertedPrice` holds it, and it is compared).
    public var price: Money?
    /// A price the provider stated that is not a whole number of minor units: never the order's amount.
    public var unconvertedPrice: UnconvertedPrice?
    /// The `appAccountToken` the provider signed with the purchase (App Store), when it carries one: the order it was
    /// bought for. Compared with the order's, so a transaction bought for another order never verifies this one.
    public var appAccountToken: UUID?

    public init(
        transactionId: String, productId: String, quantity: Int = 1, environment: PurchaseEnvironment,
        purchasedAt: Date, price: Money? = nil, unconvertedPrice: UnconvertedPrice? = nil, appAccountToken: UUID? = nil
    ) {
        self.transactionId = transactionId
        self.productId = productId
        self.quantity = quantity
        self.environment = environment
        self.purchasedAt = EventTime.truncated(purchasedAt)
        self.price = price
        self.unconvertedPrice = unconvertedPrice
        self.appAccountToken = appAccountToken
    }
}

/// Verification did not succeed: retryable (provider unreachable, 21005…) or permanent (a forged receipt).
public struct VerificationFailed: Sendable, Hashable {
    public var code: String
    public var retryable: Bool
    public var message: String?

    public init(code: String, retryable: Bool, message: String? = nil) {
        self.code = code
        self.retryable = retryable
        self.message = message
    }
}

/// The goods were credited to the account: at most once per transactionId, across all orders.
public struct OrderGranted: Sendable, Hashable {
    public var transactionId: String
    public var accountId: String
    /// What was credited, as the granting system describes it (a JSON object).
    public var items: JSONValue?

    public init(transactionId: String, accountId: String, items: JSONValue? = nil) {
        self.transactionId = transactionId
        self.accountId = accountId
        self.items = items
    }
}

/// Who reported that the provider's transaction was finished.
public enum FinishedBy: String, Sendable, Hashable, Codable, CaseIterable {
    case client, server
}

/// The app finished the provider's transaction, so the provider stops re-delivering it.
public struct OrderFinished: Sendable, Hashable {
    public var by: FinishedBy

    public init(by: FinishedBy = .client) {
        self.by = by
    }
}

/// Why an order ended before anyone paid.
public enum CancelReason: String, Sendable, Hashable, Codable, CaseIterable {
    case userCancelled = "user_cancelled"
    case paymentFailed = "payment_failed"
    case expired
    case other
}

/// The order was abandoned before a receipt arrived.
public struct OrderCancelled: Sendable, Hashable {
    public var reason: CancelReason

    public init(reason: CancelReason) {
        self.reason = reason
    }
}

/// The provider gave the money back (refund or revocation); `amount` nil means the whole order amount.
public struct OrderRefunded: Sendable, Hashable {
    public var transactionId: String
    public var amount: Money?
    public var reason: String?
    /// When the provider refunded, if it said; kept to the millisecond like all event times.
    public var refundedAt: Date?

    public init(transactionId: String, amount: Money? = nil, reason: String? = nil, refundedAt: Date? = nil) {
        self.transactionId = transactionId
        self.amount = amount
        self.reason = reason
        self.refundedAt = refundedAt.map(EventTime.truncated)
    }
}
