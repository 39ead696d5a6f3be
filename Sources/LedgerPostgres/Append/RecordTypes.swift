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

/// Requests the ledger refuses before any rule is checked.
public enum LedgerError: Error, Sendable, Hashable {
    /// A posted event or parameter is malformed; `field` names it (e.g. `events[1].data.amount`).
    case invalidEvent(field: String, message: String)
    /// The type is not one of the ledger's event types.
    case unknownEventType(field: String, type: String)
    /// The same event id twice in one batch.
    case duplicateEventId(UUID)
}
