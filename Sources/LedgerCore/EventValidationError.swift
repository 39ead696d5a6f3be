/// Why a posted event was not even considered: its type is unknown or its data malformed. Names the field,
/// so a client can fix its request without reading our code.
public enum EventValidationError: Error, Sendable, Hashable {
    case unknownEventType(String)
    /// `field` is a path like `data.amount.currency`, or `data` when data is not an object.
    case invalidField(field: String, message: String)

    public var code: String {
        switch self {
        case .unknownEventType: "unknown_event_type"
        case .invalidField: "invalid_request"
        }
    }

    /// The field the error names (`type` for an unknown type).
    public var field: String {
        switch self {
        case .unknownEventType: "type"
        case .invalidField(let field, _): field
        }
    }

    /// A sentence naming the field, e.g. "data.amount.currency must be 3 upper-case letters (ISO 4217)".
    public var message: String {
        switch self {
        case .unknownEventType(let type):
            "\(type) is not an event type of this ledger (known: "
                + EventType.allCases.map(\.rawValue).joined(separator: ", ") + ")"
        case .invalidField(_, let message):
            message
        }
    }
}
