import Foundation
import LedgerCore

/// One line of an order's story: the event and the state it left the order in.
public struct HistoryEntry: Sendable, Hashable {
    public var event: StoredEvent
    public var stateAfter: OrderState?
}

/// "What happened to this order", as of a moment.
public struct OrderHistory: Sendable, Hashable {
    public var orderId: String
    public var asOf: Date?
    public var entries: [HistoryEntry]
    /// The order as of `asOf`; nil when it did not exist yet.
    public var order: Order?
}

/// The answer to "was this transaction already credited?".
public struct TransactionStatus: Sendable, Hashable {
    public var transactionId: String
    public var orderId: String
    public var accountId: String
    public var state: OrderState
    public var grantedAt: Date?
    public var finishedAt: Date?
    public var refundedAt: Date?
}

/// A page of orders and the cursor for the next one.
public struct OrderPage: Sendable, Hashable {
    public var orders: [Order]
    public var nextCursor: String?
}
