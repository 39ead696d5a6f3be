import Foundation
import LedgerCore

/// How the API and `ledger webhooks … --json` show endpoints, deliveries and attempts: never a secret.
extension WebhookEndpoint {
    public var json: JSONValue {
        [
            "name": .string(name), "url": .string(url), "events": .array(selectors.map(JSONValue.string)),
            "health": .string(health), "enabled": .bool(enabled), "disabledReason": .text(disabledReason),
            "failingSince": .time(failingSince), "createdAt": .time(createdAt),
            "previousSecretValidUntil": .time(previousSecretUntil), "deliveringNode": .text(deliveringNode),
            "pending": .int(pending), "oldestPendingSince": .time(oldestPendingSince), "lastDeliveredAt": .time(lastDeliveredAt),
        ]
    }
}

extension WebhookDeliveryRecord {
    public var json: JSONValue {
        [
            "eventId": .string(eventId.lowercasedText), "position": .int(position), "kind": .string(stream.kind.name),
            "streamId": .string(stream.id), "version": .int(Int64(version)), "type": .string(type),
            "state": .string(state.rawValue), "queuedAt": .time(queuedAt), "attempts": .int(Int64(attempts)),
            "nextAttemptAt": .time(nextAttemptAt), "deliveredAt": .time(deliveredAt), "givenUpAt": .time(givenUpAt),
            "lastAttempt": lastAttempt?.json ?? .null,
        ]
    }
}

extension WebhookAttempt {
    public var json: JSONValue {
        [
            "at": .time(at), "node": .string(node), "outcome": .string(outcome.rawValue),
            "status": status.map { .int(Int64($0)) } ?? .null, "latencyMs": .int(Int64(latencyMilliseconds)),
            "response": .string(response),
        ]
    }
}
