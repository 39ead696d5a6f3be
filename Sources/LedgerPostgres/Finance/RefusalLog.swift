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
        try await client.query(
            """
            INSERT INTO refusals (actor, order_id, event_type, transaction_id, code, details)
            VALUES (\(actor), \(orderId), \(event.type.rawValue), \(event.transactionId), \(refusal.code),
                    \(JSONValue.object(refusal.details).canonicalJSON)::jsonb)
            """, logger: logger, reading: { _ in })
    }

    /// The latest `limit` refusals of one order, newest first.
    func refusals(ofOrder orderId: String, limit: Int) async throws -> [RecordedRefusal] {
        try await client.query(
            """
            SELECT id, recorded_at, actor, event_type, transaction_id, code, details::text FROM refusals
            WHERE order_id = \(orderId) ORDER BY id DESC LIMIT \(limit)
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
