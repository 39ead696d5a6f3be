import Foundation
import LedgerCore
import Logging
import PostgresNIO

/// The webhooks entry point (`LedgerDatabase.webhooks`), the one owner of schema/029: endpoints (here), the queue of
/// deliveries fed by the feed consumer `webhooks` and the attempts (`Webhooks+Queue`), what was delivered
/// (`Webhooks+Deliveries`). Sending is `LedgerWebhooks`'; every time comes from the caller's clock.
public struct Webhooks: Sendable {
    let pools: EventLoopPools
    let logger: Logger

    var client: SessionPool { pools.current }

    /// Adds an endpoint, sent the events `selectors` select from now on — the database's now, the clock events are
    /// recorded by; returns its signing secret, the only time it is shown.
    public func add(name: String, url: WebhookEndpointURL, selectors: [WebhookEventSelector]) async throws -> WebhookSecret {
        guard FeedConsumer.isValidName(name) else { throw WebhookEndpointError.invalidName(name) }
        guard !selectors.isEmpty else { throw WebhookEndpointError.noSelectors }
        let secret = WebhookSecret.generate()
        do {
            try await client.queryToEnd("""
                INSERT INTO webhook_endpoints (name, url, event_selectors, secret)
                VALUES (\(name), \(url.description), \(selectors.map(\.pattern)), \(ByteBuffer(bytes: secret.key)))
                """, logger: logger)
        } catch where sqlState(of: error) == SQLStates.uniqueViolation {
            throw WebhookEndpointError.nameTaken(name)
        }
        return secret
    }

    /// Whether any endpoint exists (enabled or not).
    public func exist() async throws -> Bool {
        try await client.query("SELECT EXISTS (SELECT 1 FROM webhook_endpoints)", .reads, logger: logger) { rows in
            for try await exists in rows.decode(Bool.self) { return exists }
            return false
        }
    }

    /// Every endpoint, by name, with how far behind its deliveries are.
    public func list(now: Date) async throws -> [WebhookEndpoint] {
        try await endpoints(where: "true", now: now)
    }

    public func endpoint(_ name: String, now: Date) async throws -> WebhookEndpoint? {
        try await endpoints(where: "w.name = $1", name, now: now).first
    }

    private func endpoints(where condition: String, _ name: String? = nil, now: Date) async throws -> [WebhookEndpoint] {
        var bindings = PostgresBindings()
        if let name { bindings.append(name) }
        let sql = """
            SELECT w.name, w.url, w.event_selectors, w.enabled, w.disabled_reason, w.failing_since, w.created_at,
                   w.previous_secret_until, w.leased_by, w.leased_until,
                   (SELECT count(*) FROM webhook_deliveries d WHERE d.endpoint = w.name AND d.delivered_at IS NULL),
                   (SELECT min(d.queued_at) FROM webhook_deliveries d WHERE d.endpoint = w.name AND d.delivered_at IS NULL),
                   (SELECT max(a.attempted_at) FROM webhook_attempts a WHERE a.endpoint = w.name AND a.outcome = 'delivered')
            FROM webhook_endpoints w WHERE \(condition) ORDER BY w.name
            """
        return try await client.query(PostgresQuery(unsafeSQL: sql, binds: bindings), .reads, logger: logger) { rows in
            var endpoints: [WebhookEndpoint] = []
            for try await (name, url, selectors, enabled, disabledReason, failingSince, createdAt, overlapUntil, leasedBy,
                           leasedUntil, pending, oldestPending, lastDelivered)
                in rows.decode((String, String, [String], Bool, String?, Date?, Date, Date?, String?, Date?, Int64, Date?, Date?).self)
            {
                endpoints.append(WebhookEndpoint(
                    name: name, url: url, selectors: selectors, enabled: enabled, disabledReason: disabledReason,
                    failingSince: failingSince, createdAt: createdAt,
                    previousSecretUntil: overlapUntil.flatMap { $0 > now ? $0 : nil },
                    deliveringNode: leasedUntil.flatMap { $0 > now ? leasedBy : nil },
                    pending: pending, oldestPendingSince: oldestPending, lastDeliveredAt: lastDelivered))
            }
            return endpoints
        }
    }

    /// Stops sending to `name` (its events still queue, kept for when it is enabled again).
    public func disable(_ name: String, reason: String) async throws {
        try await changeOne(name, """
            UPDATE webhook_endpoints SET enabled = false, disabled_reason = \(reason), lease = NULL, leased_by = NULL,
                leased_until = NULL
            WHERE name = \(name) RETURNING 1
            """)
    }

    /// Sends to `name` again: disabled or failing, the oldest pending delivery of each stream is due at once (given
    /// up or waiting for a retry); the rest follow each in its turn.
    public func enable(_ name: String, now: Date) async throws {
        try await changeOne(name, """
            WITH endpoint AS (
                UPDATE webhook_endpoints SET enabled = true, disabled_reason = NULL, failing_since = NULL
                WHERE name = \(name) RETURNING name
            ), due AS (
                UPDATE webhook_deliveries d SET next_attempt_at = \(now), given_up_at = NULL
                FROM endpoint WHERE d.endpoint = endpoint.name AND d.delivered_at IS NULL
                  AND (d.given_up_at IS NOT NULL OR d.next_attempt_at > \(now))
            )
            SELECT 1 FROM endpoint
            """)
    }

    /// A new secret for `name`; the one it replaces signs too (a second signature in each delivery) for `overlap`,
    /// so receivers can change their secret meanwhile.
    public func rotateSecret(_ name: String, overlap: Duration, now: Date) async throws -> WebhookSecret {
        guard overlap >= .zero, overlap <= .seconds(30 * 86_400) else { throw WebhookEndpointError.invalidOverlap }
        let secret = WebhookSecret.generate()
        try await changeOne(name, """
            UPDATE webhook_endpoints
            SET previous_secret = secret, previous_secret_until = \(now.addingTimeInterval(overlap.seconds)),
                secret = \(ByteBuffer(bytes: secret.key))
            WHERE name = \(name) RETURNING 1
            """)
        return secret
    }

    /// Removes `name` with its queue and its attempts.
    public func remove(_ name: String) async throws {
        try await changeOne(name, "DELETE FROM webhook_endpoints WHERE name = \(name) RETURNING 1")
    }

    private func changeOne(_ name: String, _ query: PostgresQuery) async throws {
        let changed = try await client.withConnection(within: Deadline.remaining) { [logger] connection in
            var rows = 0
            for try await _ in try await connection.statement(query, logger: logger) { rows += 1 }
            return rows
        }
        guard changed == 1 else { throw WebhookEndpointError.notFound(name) }
    }
}

/// An endpoint as listed: never its secret.
public struct WebhookEndpoint: Sendable, Hashable {
    public var name: String
    public var url: String
    public var selectors: [String]
    public var enabled: Bool
    /// Why it is disabled: by whom, or the receiver's 410.
    public var disabledReason: String?
    /// Since when a delivery has used up its retries; nothing is sent until it is enabled again.
    public var failingSince: Date?
    public var createdAt: Date
    /// While a rotation overlaps: until when the previous secret signs too.
    public var previousSecretUntil: Date?
    /// The node delivering it now.
    public var deliveringNode: String?
    /// Deliveries not yet acknowledged, and since when the oldest waits.
    public var pending: Int64
    public var oldestPendingSince: Date?
    public var lastDeliveredAt: Date?

    public var health: String {
        if !enabled { return "disabled" }
        if failingSince != nil { return "failing" }
        return "active"
    }
}

public enum WebhookEndpointError: Error, CustomStringConvertible, Equatable {
    case invalidName(String)
    case nameTaken(String)
    case notFound(String)
    case noSelectors
    case invalidOverlap

    public var description: String {
        switch self {
        case .invalidName(let name):
            "webhook name \(name) must be lower case letters, digits, _ . -, starting with a letter, at most 63 characters"
        case .nameTaken(let name): "a webhook endpoint named \(name) already exists"
        case .notFound(let name): "no webhook endpoint named \(name)"
        case .noSelectors: "an endpoint needs at least one event selector"
        case .invalidOverlap: "the overlap of a secret rotation must be 0 to 30 days"
        }
    }
}
