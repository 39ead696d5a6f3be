import Foundation

/// What a provider's message means for the order, as the ledger reads it. The provider's own name for the message
/// (`ONE_TIME_CHARGE`, `TRADE_SUCCESS`, `REFUND.SUCCESS`, ...) is kept beside it in `notificationType`.
public enum ProviderEffect: String, Sendable, Hashable, Codable, CaseIterable {
    /// The provider took the money for `transactionId`.
    case payment
    /// The provider gave money back (`amount`, or the whole order when absent).
    case refund
    /// The provider took back a refund it had made.
    case refundReversed = "refund_reversed"
    /// The provider closed the trade unpaid.
    case closed
    /// Apple asks for consumption information about a refund request: finance answers it.
    case consumptionRequest = "consumption_request"
    /// Recorded as evidence; nothing follows from it (an unknown or informational type).
    case none
}

/// A payment provider's signed message about this order, verified by the ledger: the evidence kept verbatim
/// (`evidence`, e.g. the App Store JWS as received, so an auditor can verify it again offline) and the fields the
/// ledger acts on. Accepted in every state: a fact is never refused. What it leads to (a verification, a refund)
/// is recorded as ordinary events right after it, through the same rules (``ProviderFollowUp``). Only the ledger
/// records it; clients cannot post it.
public struct ProviderNotified: Sendable, Hashable {
    public var provider: Provider
    /// The provider's id for the message (`notificationUUID`, `notify_id`, WeChat's `id`): one message, one event.
    public var notificationId: String
    public var notificationType: String
    public var subtype: String?
    public var effect: ProviderEffect
    /// When the provider signed (or, without a signed date, sent) the message: orders the facts of one order.
    public var signedAt: Date
    public var transactionId: String?
    public var originalTransactionId: String?
    public var productId: String?
    /// What the provider says was paid (a payment) or refunded (a refund), in minor units; nil when it states none,
    /// or when its price is not in whole minor units (`unconvertedPrice`).
    public var amount: Money?
    /// A price the provider stated that is not a whole, non-negative number of minor units (App Store): no order's
    /// amount, so a payment stating it is never applied.
    public var unconvertedPrice: UnconvertedPrice?
    public var environment: PurchaseEnvironment?
    public var appAccountToken: UUID?
    public var purchasedAt: Date?
    public var revocationReason: String?
    /// The message as received (a JSON object; its shape is the provider's, see docs/providers.md).
    public var evidence: JSONValue

    public init(
        provider: Provider, notificationId: String, notificationType: String, subtype: String? = nil,
        effect: ProviderEffect, signedAt: Date, transactionId: String? = nil, originalTransactionId: String? = nil,
        productId: String? = nil, amount: Money? = nil, unconvertedPrice: UnconvertedPrice? = nil, environment: PurchaseEnvironment? = nil,
        appAccountToken: UUID? = nil, purchasedAt: Date? = nil, revocationReason: String? = nil,
        evidence: JSONValue
    ) {
        self.provider = provider
        self.notificationId = notificationId
        self.notificationType = notificationType
        self.subtype = subtype
        self.effect = effect
        self.signedAt = EventTime.truncated(signedAt)
        self.transactionId = transactionId
        self.originalTransactionId = originalTransactionId
        self.productId = productId
        self.amount = amount
        self.unconvertedPrice = unconvertedPrice
        self.environment = environment
        self.appAccountToken = appAccountToken
        self.purchasedAt = purchasedAt.map(EventTime.truncated)
        self.revocationReason = revocationReason
        self.evidence = evidence
    }
}

/// The provider took back a refund: the order returns to where the refund found it.
public struct RefundReversed: Sendable, Hashable {
    public var transactionId: String

    public init(transactionId: String) {
        self.transactionId = transactionId
    }
}

/// How the ledger finds the order a verified provider message is about.
public struct ProviderMatch: Sendable, Hashable {
    /// The ledger's order id, when the provider echoes it (Alipay's and WeChat Pay's `out_trade_no`).
    public var orderId: String?
    /// Transactions an order may already be bound to (App Store: the transaction, then the original transaction).
    public var transactionIds: [String]
    /// The `appAccountToken` the app set at purchase (App Store).
    public var appAccountToken: UUID?

    public init(orderId: String? = nil, transactionIds: [String] = [], appAccountToken: UUID? = nil) {
        self.orderId = orderId
        self.transactionIds = transactionIds
        self.appAccountToken = appAccountToken
    }
}

/// A verified provider message as the ledger records it: the fact for the order's stream and how to find the order.
public struct ProviderMessage: Sendable, Hashable {
    public var fact: ProviderNotified
    public var match: ProviderMatch

    public init(fact: ProviderNotified, match: ProviderMatch) {
        self.fact = fact
        self.match = match
    }
}

