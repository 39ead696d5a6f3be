import Foundation
import LedgerCore
import Logging
import PostgresNIO

/// The refusal log (`refusals`): every refused event, kept as evidence though nothing was written to its order.
/// Finance reads it for `refused_grant` anomalies: a wrong-account or double-credit attempt is visible there, not only
/// to the caller that got the 409.
struct RefusalLog: Sendable {
    let client: SessionPool
    let logger: Logger

    init(client: SessionPool, logger: Logger = Logger(label: "ledger.refusals")) {
        self.client = client
        self.logger = logger
    }

    func record(_ refusal: Refusal, of event: OrderEvent, orderId: String, actor: String) async throws {
        try await insert(
            actor: actor, streamId: orderId, eventType: event.type.rawValue, transactionId: event.transactionId,
            code: refusal.code, details: refusal.details)
    }

    /// A subscription's refusal: kept under the subscription's id (the log's `order_id` holds the stream's id, and
    /// `event_type` its kind: `subscription.…`), for the `refused_claim` anomaly.
    func record(_ refusal: SubscriptionRefusal, of event: SubscriptionEvent, subscriptionId: String, actor: String) async throws {
        try await insert(
            actor: actor, streamId: subscriptionId, eventType: event.type.rawValue,
            transactionId: event.transaction?.transactionId, code: refusal.code, details: refusal.details)
    }

    private func insert(
        actor: String, streamId: String, eventType: String, transactionId: String?, code: String, details: [String: JSONValue]
    ) async throws {
        try await client.query(
            """
            INSERT INTO refusals (actor, order_id, event_type, transaction_id, code, details)
            VALUES (\(actor), \(streamId), \(eventType), \(transactionId), \(code), \(JSONValue.object(details).canonicalJSON)::jsonb)
            """, logger: logger, reading: { _ in })
    }

    /// The latest `limit` refusals of one order, newest first.
    func refusals(ofOrder orderId: String, limit: Int) async throws -> [RecordedRefusal] {
        try await client.query(
            """
            SELECT id, recorded_at, actor, event_type, transaction_id, code, details::text FROM refusals
            WHERE order_id = \(orderId) AND event_type NOT LIKE 'subscription.%' ORDER BY id DESC LIMIT \(limit)
            """, .reads, logger: logger
        ) { rows in
            var found: [RecordedRefusal] = []
            for try await (id, recordedAt, actor, eventType, transactionId, code, details)
                in rows.decode((Int64, Date, String, String, String?, String, String).self) {
                found.append(RecordedRefusal(
                    id: id, recordedAt: recordedAt, actor: actor, eventType: eventType, transactionId: transactionId,
                    code: code, details: (try? JSONValue(parsing: Array(details.utf8))) ?? .object([:])))
            }
            return found
        }
    }
}

/// One row of the refusal log.
public struct RecordedRefusal: Sendable, Hashable {
    public var id: Int64
    public var recordedAt: Date
    public var actor: String
    public var eventType: String
    public var transactionId: String?
    public var code: String
    public var details: JSONValue
}
