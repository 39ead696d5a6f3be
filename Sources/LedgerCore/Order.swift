import Foundation

/// Where an order stands in the purchase flow; every state is reached only through the transition table.
public enum OrderState: String, Sendable, Hashable, Codable, CaseIterable {
    case created
    case paymentQueued = "payment_queued"
    case receiptReceived = "receipt_received"
    case verificationFailed = "verification_failed"
    case verified
    case granted
    case finished
    case rejected
    case cancelled
    case refunded
}

/// Something unusual the order went through that its state alone does not show — the cases finance and
/// support must find (a receipt after cancelling, a transaction finished or refunded before the goods were credited).
public enum OrderFlag: String, Sendable, Hashable, Codable, CaseIterable {
    case lateReceipt = "late_receipt"
    case finishedBeforeGrant = "finished_before_grant"
    case refundedBeforeGrant = "refunded_before_grant"
}

/// The projection of one order: exactly the fold of its events, and what the decider judges new events against.
public struct Order: Sendable, Hashable {
    public var orderId: String
    public var accountId: String
    public var productId: String
    public var quantity: Int
    public var amount: Money
    public var provider: Provider
    public var environment: PurchaseEnvironment
    public var appAccountToken: UUID?
    public var state: OrderState
    /// The version of the last event folded in (1 = just created).
    public var version: Int
    /// The provider transaction this order is bound to, from its first receipt on.
    public var transactionId: String?
    /// In the order raised, no duplicates.
    public var flags: [OrderFlag]
    public var verificationAttempts: Int
    public var lastErrorCode: String?
    public var refundedAmount: Money?
    public var createdAt: Date
    public var updatedAt: Date
    public var grantedAt: Date?
    public var finishedAt: Date?
    public var refundedAt: Date?

    public init(
        orderId: String, accountId: String, productId: String, quantity: Int, amount: Money, provider: Provider,
        environment: PurchaseEnvironment, appAccountToken: UUID?, state: OrderState, version: Int,
        transactionId: String?, flags: [OrderFlag], verificationAttempts: Int, lastErrorCode: String?,
        refundedAmount: Money?, createdAt: Date, updatedAt: Date, grantedAt: Date?, finishedAt: Date?, refundedAt: Date?
    ) {
        self.orderId = orderId
        self.accountId = accountId
        self.productId = productId
        self.quantity = quantity
        self.amount = amount
        self.provider = provider
        self.environment = environment
        self.appAccountToken = appAccountToken
        self.state = state
        self.version = version
        self.transactionId = transactionId
        self.flags = flags
        self.verificationAttempts = verificationAttempts
        self.lastErrorCode = lastErrorCode
        self.refundedAmount = refundedAmount
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.grantedAt = grantedAt
        self.finishedAt = finishedAt
        self.refundedAt = refundedAt
    }

    /// Adds a flag once; raising it again changes nothing.
    mutating func raise(_ flag: OrderFlag) {
        if !flags.contains(flag) { flags.append(flag) }
    }
}
