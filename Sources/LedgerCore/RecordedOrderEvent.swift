import Foundation

/// An event as stored in an order's stream: what `evolve` folds, carrying the version and time the store gave it.
public struct RecordedOrderEvent: Sendable, Hashable {
    public var orderId: String
    public var version: Int
    public var event: OrderEvent
    public var recordedAt: Date

    public init(orderId: String, version: Int, event: OrderEvent, recordedAt: Date) {
        self.orderId = orderId
        self.version = version
        self.event = event
        self.recordedAt = recordedAt
    }
}

/// What the ledger knows about a transactionId across all orders (from the order-transactions projection):
/// the one fact the decider needs from outside the order to keep a transaction to one order and one grant.
public struct TransactionBinding: Sendable, Hashable {
    public var transactionId: String
    /// The order the transaction is bound to.
    public var orderId: String
    /// Whether that order has granted it.
    public var granted: Bool

    public init(transactionId: String, orderId: String, granted: Bool) {
        self.transactionId = transactionId
        self.orderId = orderId
        self.granted = granted
    }
}
