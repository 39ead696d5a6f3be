import Foundation
import LedgerCore

/// The body of a delivery, in the Standard Webhooks convention's shape: `type` (the event's type), `timestamp` (when
/// the ledger recorded it) and `data`: the event as the feed shows it (`event`, `GET /v1/events`) and its stream's
/// state right after it, under the stream's kind (`order`, as `GET /v1/orders/{id}` shows one; `subscription`, as
/// `GET /v1/subscriptions/{id}` does at that moment). Rendered again at each attempt from what is stored, it is the
/// same every time.
enum WebhookBody {
    static func render(_ event: StoredEvent, stateAfter state: JSONValue?) -> [UInt8] {
        let body: JSONValue = [
            "type": .string(event.type),
            "timestamp": .time(event.recordedAt),
            "data": .object(["event": event.feedJSON, event.stream.kind.name: state ?? .null]),
        ]
        return Array(body.canonicalJSON.utf8)
    }
}
