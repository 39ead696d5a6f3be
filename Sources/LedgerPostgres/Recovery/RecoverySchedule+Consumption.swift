import Foundation
import LedgerCore
import PostgresNIO

/// Apple's `CONSUMPTION_REQUEST`s the ledger answers (schema/028, `consumption_answers`): each request kept in
/// `provider_messages` and still within Apple's window, answered once, under a lease as a recovery question is.
/// Every time comes from the caller's clock.
extension RecoverySchedule {
    /// Takes up to `limit` requests to answer, the oldest first, each held for `lease`: a request signed after
    /// `window` ago never answered nor attempted, or attempted without an answer and due again.
    public func claimDueConsumptionRequests(
        now: Date, window: Duration, lease duration: Duration, limit: Int
    ) async throws -> [ConsumptionRequestClaim] {
        let lease = UUID()
        let until = now.addingTimeInterval(duration.seconds)
        let since = now.addingTimeInterval(-window.seconds)
        let logger = self.logger
        return try await client.withConnection(within: Deadline.remaining) { connection in
            var claims: [ConsumptionRequestClaim] = []
            for try await (notificationId, transactionId, requestedAt, attempts) in try await connection.statement("""
                INSERT INTO consumption_answers AS a (notification_id, transaction_id, requested_at, next_attempt_at, lease, leased_until)
                SELECT m.notification_id, m.transaction_id, m.signed_at, \(now), \(lease), \(until)
                FROM provider_messages m LEFT JOIN consumption_answers k USING (notification_id)
                WHERE m.provider = 'app_store' AND m.effect = 'consumption_request' AND m.signed_at > \(since)
                  AND m.transaction_id IS NOT NULL
                  AND (k.notification_id IS NULL
                       OR (k.next_attempt_at <= \(now) AND (k.leased_until IS NULL OR k.leased_until <= \(now))))
                ORDER BY m.signed_at
                LIMIT \(limit)
                ON CONFLICT (notification_id) DO UPDATE SET lease = EXCLUDED.lease, leased_until = EXCLUDED.leased_until
                    WHERE a.next_attempt_at <= \(now) AND (a.leased_until IS NULL OR a.leased_until <= \(now))
                RETURNING notification_id, transaction_id, requested_at, attempts
                """, logger: logger).decode((String, String, Date, Int).self) {
                claims.append(ConsumptionRequestClaim(
                    notificationId: notificationId, transactionId: transactionId, requestedAt: requestedAt,
                    attempts: attempts, lease: lease))
            }
            return claims
        }
    }

    /// When the ledger shows the purchase of `transactionId` delivered: the grant of its order, or of its
    /// subscription period; nil when it was never credited.
    public func deliveredAt(_ transactionId: String) async throws -> Date? {
        let logger = self.logger
        return try await client.withConnection(within: Deadline.remaining) { connection in
            var delivered: Date?
            for try await at in try await connection.statement("""
                SELECT min(granted_at) FROM (
                    SELECT granted_at FROM order_transactions WHERE transaction_id = \(transactionId)
                    UNION ALL
                    SELECT granted_at FROM subscription_transactions WHERE transaction_id = \(transactionId)
                ) credited
                """, logger: logger).decode(Date?.self) {
                delivered = at
            }
            return delivered
        }
    }

    /// Gives a request back after an attempt: `sent` when Apple accepted `body` (in `environment`), else due again
    /// at `next` (nil: no more attempts — Apple's window closed, or it refused the answer for good). Returns false
    /// when the lease was lost.
    @discardableResult
    public func completeConsumptionAnswer(
        _ claim: ConsumptionRequestClaim, at now: Date, body: JSONValue, sentIn environment: String?, outcome: String,
        said: String, next: Date?
    ) async throws -> Bool {
        try await count("""
            UPDATE consumption_answers
            SET lease = NULL, leased_until = NULL, attempts = attempts + 1, body = \(body.canonicalJSON)::text::jsonb,
                sent_at = CASE WHEN \(environment)::text IS NULL THEN NULL ELSE \(now)::timestamptz END,
                environment = \(environment), last_outcome = \(outcome), last_said = \(said), next_attempt_at = \(next)
            WHERE notification_id = \(claim.notificationId) AND lease = \(claim.lease)
            RETURNING 1
            """) == 1
    }

    /// What was answered to the request `notificationId` (Apple's `notificationUUID`), if anything was attempted.
    public func consumptionAnswer(_ notificationId: String) async throws -> ConsumptionAnswerRecord? {
        let logger = self.logger
        return try await client.withConnection(within: Deadline.remaining) { connection in
            var record: ConsumptionAnswerRecord?
            for try await (transactionId, attempts, body, sentAt, environment, outcome, said, next) in try await connection.statement("""
                SELECT transaction_id, attempts, body::text, sent_at, environment, last_outcome, last_said, next_attempt_at
                FROM consumption_answers WHERE notification_id = \(notificationId)
                """, logger: logger).decode((String, Int, String?, Date?, String?, String?, String?, Date?).self) {
                record = ConsumptionAnswerRecord(
                    transactionId: transactionId, attempts: attempts,
                    body: body.flatMap { try? JSONValue(parsing: Array($0.utf8)) }, sentAt: sentAt, environment: environment,
                    lastOutcome: outcome, lastSaid: said, nextAttemptAt: next)
            }
            return record
        }
    }
}

/// A `CONSUMPTION_REQUEST` this node holds, to answer.
public struct ConsumptionRequestClaim: Sendable, Hashable {
    /// Apple's `notificationUUID` of the request.
    public var notificationId: String
    public var transactionId: String
    /// When Apple signed the request: its 12 hours count from here.
    public var requestedAt: Date
    /// Attempts made before this one.
    public var attempts: Int
    public var lease: UUID
}

/// What the ledger answered to one request, as kept.
public struct ConsumptionAnswerRecord: Sendable, Hashable {
    public var transactionId: String
    public var attempts: Int
    /// The body last sent (or attempted).
    public var body: JSONValue?
    /// When Apple accepted it; nil while not (yet) accepted.
    public var sentAt: Date?
    public var environment: String?
    public var lastOutcome: String?
    public var lastSaid: String?
    public var nextAttemptAt: Date?
}
