import Foundation
import LedgerCore

/// An event as a client posts it, before validation.
public struct Submission: Sendable, Hashable {
    public var eventId: UUID
    public var type: String
    public var data: JSONValue
    public var occurredAt: Date?

    public init(eventId: UUID, type: String, data: JSONValue, occurredAt: Date? = nil) {
        self.eventId = eventId
        self.type = type
        self.data = data
        self.occurredAt = occurredAt
    }
}

/// A validated event with its idempotency key.
struct IdentifiedEvent: Sendable, Hashable {
    var eventId: UUID
    var event: OrderEvent
    var occurredAt: Date?
}

/// Who posted events and in which request: stored as each event's metadata.
public struct EventMetadata: Sendable, Hashable {
    public var actor: String
    public var requestId: String?
    public var correlationId: String?
    public var causationId: String?

    public init(actor: String, requestId: String? = nil, correlationId: String? = nil, causationId: String? = nil) {
        self.actor = actor
        self.requestId = requestId
        self.correlationId = correlationId
        self.causationId = causationId
    }

    var json: JSONValue {
        var members: [String: JSONValue] = ["actor": .string(actor)]
        members["requestId"] = requestId.map(JSONValue.string)
        members["correlationId"] = correlationId.map(JSONValue.string)
        members["causationId"] = causationId.map(JSONValue.string)
        return .object(members)
    }
}

/// What `Ledger.record` answers: where the events landed, and the order right after them.
public struct Recorded: Sendable, Hashable {
    public var append: AppendResult
    /// The order as of the recorded events (for a replay: as of the original append, not as it is now).
    public var order: Order
}

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

/// Requests the ledger refuses before any rule is checked.
public enum LedgerError: Error, Sendable, Hashable {
    /// A posted event or parameter is malformed; `field` names it (e.g. `events[1].data.amount`).
    case invalidEvent(field: String, message: String)
    /// The type is not one of the ledger's event types.
    case unknownEventType(field: String, type: String)
    /// The same event id twice in one batch.
    case duplicateEventId(UUID)
}
