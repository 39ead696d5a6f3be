import Foundation

/// One append's decision, pure: a batch of events for one order, each decided against the order as the events
/// before it in the batch left it, all recorded at one time. A transaction a grant binds is carried forward, so a
/// later event of the same batch sees it bound exactly as it would in a later append.
public enum OrderBatch {
    /// The order as the append found it: its projected state, its stream's version, the database's clock at the read,
    /// and who holds each transactionId the new events name (`TransactionBinding`).
    public struct Start: Sendable {
        public var orderId: String
        public var order: Order?
        public var version: Int
        public var recordedAt: Date
        public var bindings: [String: TransactionBinding]

        public init(orderId: String, order: Order?, version: Int, recordedAt: Date, bindings: [String: TransactionBinding]) {
            self.orderId = orderId
            self.order = order
            self.version = version
            self.recordedAt = recordedAt
            self.bindings = bindings
        }
    }

    /// The order the whole batch leaves; nil only for an empty batch on no order. The first refusal refuses the whole
    /// batch, naming the event it refused.
    public static func decide(_ events: [OrderEvent], from start: Start) throws(RefusedEvent) -> Order? {
        var order = start.order
        var bindings = start.bindings
        for (offset, event) in events.enumerated() {
            let binding = event.transactionId.flatMap { bindings[$0] }
            if let refusal = OrderDecider.decide(order, event, orderId: start.orderId, binding: binding) {
                throw RefusedEvent(refusal: refusal, event: event)
            }
            let recorded = RecordedOrderEvent(
                orderId: start.orderId, version: start.version + offset + 1, event: event, recordedAt: start.recordedAt)
            order = OrderDecider.evolve(order, recorded)
            if let order, let transactionId = order.transactionId {
                bindings[transactionId] = TransactionBinding(
                    transactionId: transactionId, orderId: order.orderId, granted: order.grantedAt != nil)
            }
        }
        return order
    }
}

/// A refusal of one event of a batch, with the event: the batch is refused whole, and the refusal log keeps the event.
public struct RefusedEvent: Error, Sendable, Hashable {
    public let refusal: Refusal
    public let event: OrderEvent

    public init(refusal: Refusal, event: OrderEvent) {
        self.refusal = refusal
        self.event = event
    }
}
