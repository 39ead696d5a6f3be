import Foundation
import LedgerCore

extension StoredEvent {
    /// Who recorded the event (its metadata's `actor`).
    public var actor: JSONValue { metadata["actor"] ?? .null }

    /// A feed entry: every kind of stream, each named by `kind` and `streamId`; an order's also by `orderId`, as
    /// entries were before streams had kinds.
    public var feedJSON: JSONValue {
        var members: [String: JSONValue] = [
            "position": .int(position),
            "kind": .string(stream.kind.name),
            "streamId": .string(stream.id),
            "version": .int(Int64(version)),
            "eventId": .string(eventId.lowercasedText),
            "type": .string(type),
            "occurredAt": .time(occurredAt),
            "recordedAt": .time(recordedAt),
            "actor": actor,
            "data": data,
        ]
        if stream.kind == .order { members["orderId"] = .string(stream.id) }
        return .object(members)
    }
}

