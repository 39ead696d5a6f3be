import Foundation
import LedgerCore
import LedgerPostgres

extension Recorded {
    /// The answer to a post of events (and, identically, to its retry).
    public var json: JSONValue {
        .object([
            "orderId": .string(append.stream.id),
            "version": .int(Int64(append.version)),
            "events": .array(append.events.map { event in
                .object([
                    "eventId": .string(event.eventId.lowercasedText),
                    "version": .int(Int64(event.version)),
                    "position": .int(event.position),
                ])
            }),
            "order": order.json,
        ])
    }
}

extension HistoryEntry {
    /// One event of an order's history and the state it left the order in.
    public var json: JSONValue {
        .object([
            "position": .int(event.position),
            "version": .int(Int64(event.version)),
            "eventId": .string(event.eventId.lowercasedText),
            "type": .string(event.type),
            "occurredAt": .time(event.occurredAt),
            "recordedAt": .time(event.recordedAt),
            "actor": event.actor,
            "requestId": event.metadata["requestId"] ?? .null,
            "data": event.data,
            "stateAfter": .text(stateAfter?.rawValue),
        ])
    }
}

extension OrderHistory {
    /// The whole story at once: what `ledger history --json` prints (walking the pages).
    public var json: JSONValue {
        .object([
            "orderId": .string(orderId),
            "asOf": .time(asOf),
            "events": .array(entries.map(\.json)),
            "order": order?.json ?? .null,
        ])
    }
}

extension HistoryPage {
    /// A page of `GET /v1/orders/{orderId}/history`: `next` is the `after` of the following page, null on the last.
    public var json: JSONValue {
        .object([
            "orderId": .string(orderId),
            "asOf": .time(asOf),
            "events": .array(entries.map(\.json)),
            "order": order?.json ?? .null,
            "next": next.map { .int(Int64($0)) } ?? .null,
        ])
    }
}

extension TransactionStatus {
    public var json: JSONValue {
        .object([
            "transactionId": .string(transactionId),
            "orderId": .string(orderId),
            "accountId": .string(accountId),
            "state": .string(state.rawValue),
            "granted": .bool(grantedAt != nil),
            "grantedAt": .time(grantedAt),
            "finished": .bool(finishedAt != nil),
            "finishedAt": .time(finishedAt),
            "refunded": .bool(refundedAt != nil),
            "refundedAt": .time(refundedAt),
        ])
    }
}

extension DigestCheckpoint {
    /// The ledger digest an auditor saves: `digest` over the first `eventCount` events of the feed, the last at `position`.
    public var json: JSONValue {
        .object([
            "position": .int(position),
            "eventCount": .int(eventCount),
            "digest": .string(digest.hex),
            "pinned": .string(pinned),
            "recordedAt": .time(recordedAt),
        ])
    }
}

extension SubscriptionMessageOutcome {
    /// The `subscription` member of a provider notification's answer.
    var json: JSONValue {
        switch self {
        case .recorded(let subscriptionId, let version):
            ["outcome": "recorded", "subscriptionId": .string(subscriptionId), "version": .int(Int64(version))]
        case .duplicate(let subscriptionId):
            ["outcome": "duplicate", "subscriptionId": .string(subscriptionId)]
        case .refused(let subscriptionId, let code, let reason):
            ["outcome": "refused", "subscriptionId": .string(subscriptionId), "code": .string(code), "reason": .string(reason)]
        }
    }
}
