import Foundation
import LedgerCore
import PostgresNIO

/// What was sent to an endpoint: its deliveries, newest first, and each one's attempts.
extension Webhooks {
    /// Up to `limit` deliveries of `name` (`nextAttemptAt` nil on a pending one: it waits for its stream's earlier
    /// event), the latest queued first, before feed position `before` (nil: the latest),
    /// only those in `state` when given; each with its last attempt.
    public func deliveries(
        _ name: String, state: WebhookDeliveryState?, before: Int64?, limit: Int, now: Date
    ) async throws -> [WebhookDeliveryRecord] {
        guard try await endpoint(name, now: now) != nil else { throw WebhookEndpointError.notFound(name) }
        let stateCondition = switch state {
        case nil: "true"
        case .delivered: "d.delivered_at IS NOT NULL"
        case .pending: "d.delivered_at IS NULL AND d.given_up_at IS NULL"
        case .givenUp: "d.given_up_at IS NOT NULL"
        }
        return try await client.query("""
            SELECT d.event_id, d.position, d.kind, d.stream_id, d.version, d.event_type, d.queued_at, d.attempts,
                   d.next_attempt_at, d.delivered_at, d.given_up_at,
                   a.attempted_at, a.node, a.outcome, a.status, a.latency_ms, a.response
            FROM webhook_deliveries d LEFT JOIN LATERAL (
                SELECT * FROM webhook_attempts a WHERE a.endpoint = d.endpoint AND a.event_id = d.event_id
                ORDER BY a.attempted_at DESC LIMIT 1
            ) a ON true
            WHERE d.endpoint = \(name) AND d.position < \(before ?? Int64.max) AND \(unescaped: stateCondition)
            ORDER BY d.position DESC LIMIT \(limit)
            """, .reads, logger: logger
        ) { rows in
            var records: [WebhookDeliveryRecord] = []
            for try await row in rows {
                let c = row.makeRandomAccess()
                var last: WebhookAttempt?
                if let at = try c[11].decode(Date?.self), let outcome = try c[13].decode(String?.self) {
                    guard let outcome = WebhookAttempt.Outcome(rawValue: outcome) else { throw CorruptRow(column: "outcome", value: outcome) }
                    last = WebhookAttempt(
                        at: at, node: try c[12].decode(String.self), outcome: outcome, status: try c[14].decode(Int?.self),
                        latencyMilliseconds: try c[15].decode(Int.self), response: try c[16].decode(String.self))
                }
                records.append(WebhookDeliveryRecord(
                    eventId: try c[0].decode(UUID.self), position: try c[1].decode(Int64.self),
                    stream: StreamName(StreamKind(try c[2].decode(String.self)), try c[3].decode(String.self)),
                    version: try c[4].decode(Int.self), type: try c[5].decode(String.self), queuedAt: try c[6].decode(Date.self),
                    attempts: try c[7].decode(Int.self), nextAttemptAt: try c[8].decode(Date?.self),
                    deliveredAt: try c[9].decode(Date?.self), givenUpAt: try c[10].decode(Date?.self), lastAttempt: last))
            }
            return records
        }
    }

    /// Every attempt to send event `eventId` to `name`, the first first.
    public func attempts(_ name: String, eventId: UUID) async throws -> [WebhookAttempt] {
        try await client.query("""
            SELECT attempted_at, node, outcome, status, latency_ms, response FROM webhook_attempts
            WHERE endpoint = \(name) AND event_id = \(eventId) ORDER BY attempted_at
            """, .reads, logger: logger
        ) { rows in
            var attempts: [WebhookAttempt] = []
            for try await (at, node, outcome, status, latency, response) in rows.decode((Date, String, String, Int?, Int, String).self) {
                guard let outcome = WebhookAttempt.Outcome(rawValue: outcome) else { throw CorruptRow(column: "outcome", value: outcome) }
                attempts.append(WebhookAttempt(
                    at: at, node: node, outcome: outcome, status: status, latencyMilliseconds: latency, response: response))
            }
            return attempts
        }
    }
}

/// Where a delivery stands.
public enum WebhookDeliveryState: String, Sendable, CaseIterable {
    case pending, delivered
    /// Its retries used up: it waits for the endpoint to be enabled again.
    case givenUp = "given_up"
}

/// A delivery as listed.
public struct WebhookDeliveryRecord: Sendable {
    public var eventId: UUID
    public var position: Int64
    public var stream: StreamName
    public var version: Int
    public var type: String
    public var queuedAt: Date
    public var attempts: Int
    public var nextAttemptAt: Date?
    public var deliveredAt: Date?
    /// When its retries ran out (the endpoint is failing since then).
    public var givenUpAt: Date?
    public var lastAttempt: WebhookAttempt?

    public var state: WebhookDeliveryState {
        deliveredAt != nil ? .delivered : givenUpAt != nil ? .givenUp : .pending
    }
}
