import Foundation
import LedgerCore
import Logging
import PostgresNIO

/// The queue of deliveries (schema/029, `webhook_deliveries`) and its attempts: filled from the feed, emptied by
/// the nodes that send (`LedgerWebhooks`), one endpoint at a time under a lease.
extension Webhooks {
    /// The feed consumer that queues each event for every endpoint that selects it and existed when it was recorded,
    /// in the transaction that advances it: each event queued once per endpoint, none lost across restarts, crashes
    /// or nodes (`FeedConsumers`). `serve` runs it on every node; one at a time holds it.
    ///
    /// "Existed when it was recorded" is judged `RecentStreams.clockToleranceSeconds` early: an append decided from
    /// a node's memory is recorded at the node's estimate of the database's clock, which may run up to that much
    /// behind, and an order appended right after an endpoint was added had its first events recorded "before" it,
    /// and never sent. So an endpoint may also be sent what was recorded in the second before it was added.
    public var queueing: FeedConsumer {
        // An event recorded before every endpoint existed is queued for none: passed over unread.
        FeedConsumer(name: "webhooks", passesOverRecordedBefore: "SELECT min(created_at) - \(Self.recordedEarly) FROM webhook_endpoints") {
            [logger] events, connection in
            try await connection.queryToEnd(WebhookQueueLock.alone, logger: logger)
            // Only the oldest pending event of a stream is scheduled: the first of the page's for its stream, and
            // only when none of the stream's is pending already.
            try await connection.queryToEnd("""
                INSERT INTO webhook_deliveries
                    (endpoint, event_id, position, kind, stream_id, version, event_type, queued_at, next_attempt_at)
                SELECT name, event_id, position, kind, stream_id, version, type, now(),
                       CASE WHEN first AND NOT EXISTS (
                           SELECT 1 FROM webhook_deliveries p
                           WHERE p.endpoint = name AND p.kind = queued.kind AND p.stream_id = queued.stream_id
                             AND p.delivered_at IS NULL) THEN now() END
                FROM (
                    SELECT w.name, e.event_id, e.position, e.kind, e.stream_id, e.version, e.type,
                           row_number() OVER (PARTITION BY w.name, e.kind, e.stream_id ORDER BY e.version) = 1 AS first
                    FROM events e JOIN webhook_endpoints w
                      ON e.recorded_at >= w.created_at - \(unescaped: Self.recordedEarly)
                     AND webhook_selects(w.event_selectors, e.kind, e.type)
                    WHERE e.position = ANY(\(events.map(\.position)))
                ) queued
                ORDER BY position
                ON CONFLICT (endpoint, event_id) DO NOTHING
                """, logger: logger)
        }
    }

    /// How far before its endpoint's creation an event's recorded time may be and the event still be sent to it.
    static let recordedEarly = "interval '\(RecentStreams.clockToleranceSeconds) seconds'"

    /// Takes, for `lease`, every endpoint that is enabled, not failing, has a delivery due at `now` and is held by
    /// no other node — except those named in `busy` (this node's, already being sent to).
    public func claimEndpoints(node: String, now: Date, lease: Duration, except busy: [String]) async throws -> [WebhookTarget] {
        let holder = UUID()
        return try await client.query("""
            UPDATE webhook_endpoints w
            SET lease = \(holder), leased_by = \(node), leased_until = \(now.addingTimeInterval(lease.seconds))
            WHERE w.enabled AND w.failing_since IS NULL AND NOT (w.name = ANY(\(busy)))
              AND (w.leased_until IS NULL OR w.leased_until <= \(now) OR w.leased_by = \(node))
              AND EXISTS (SELECT 1 FROM webhook_deliveries d
                          WHERE d.endpoint = w.name AND d.delivered_at IS NULL AND d.next_attempt_at <= \(now))
            RETURNING w.name, w.url, w.secret, CASE WHEN w.previous_secret_until > \(now) THEN w.previous_secret END
            """, logger: logger
        ) { rows in
            var targets: [WebhookTarget] = []
            for try await (name, url, secret, previous) in rows.decode((String, String, ByteBuffer, ByteBuffer?).self) {
                let secrets = [secret] + (previous.map { [$0] } ?? [])
                targets.append(WebhookTarget(
                    name: name, url: url, secrets: secrets.map { WebhookSecret(key: Array($0.readableBytesView)) }, lease: holder))
            }
            return targets
        }
    }

    /// Up to `limit` deliveries of `target` due at `now`, each the oldest waiting of its stream (so no two of one
    /// stream: they may be sent at once), each with the body to send — in one statement: the due deliveries, and
    /// every event of their streams up to theirs, to fold the state each leaves its stream in. "The oldest pending of
    /// its stream" is a subquery per row, never a join: on tables never analysed (a burst of writes) the planner took
    /// an anti-join for a one-row loop and scanned the whole backlog for every due row (2.8 s for 2,000; now 1.3 ms).
    public func dueDeliveries(_ target: WebhookTarget, now: Date, limit: Int) async throws -> [WebhookDelivery] {
        let columns = EventStore.columns.split(separator: ", ").map { "e." + $0 }.joined(separator: ", ")
        return try await client.query("""
            WITH due AS (
                SELECT d.kind, d.stream_id, d.version, d.attempts FROM webhook_deliveries d
                WHERE d.endpoint = \(target.name) AND d.delivered_at IS NULL AND d.next_attempt_at <= \(now)
                  AND d.version = (
                      SELECT min(p.version) FROM webhook_deliveries p
                      WHERE p.endpoint = d.endpoint AND p.kind = d.kind AND p.stream_id = d.stream_id
                        AND p.delivered_at IS NULL)
                ORDER BY d.next_attempt_at LIMIT \(limit)
            )
            SELECT \(unescaped: columns), due.attempts, e.version = due.version
            FROM due JOIN events e ON e.kind = due.kind AND e.stream_id = due.stream_id AND e.version <= due.version
            ORDER BY e.kind, e.stream_id, e.version
            """, .reads, logger: logger
        ) { rows in
            var deliveries: [WebhookDelivery] = []
            var state = StreamState(), stream: StreamName?
            for try await row in rows {
                let columns = row.makeRandomAccess()
                let event = try EventStore.decode(columns)
                if event.stream != stream { (state, stream) = (StreamState(), event.stream) }
                try state.add(event)
                guard try columns[EventStore.columnCount + 1].decode(Bool.self) else { continue }
                deliveries.append(WebhookDelivery(
                    event: event, attempts: try columns[EventStore.columnCount].decode(Int.self),
                    body: WebhookBody.render(event, stateAfter: state.json(at: event.recordedAt))))
            }
            return deliveries.sorted { $0.event.position < $1.event.position }
        }
    }

    /// Keeps a batch's attempts and their outcomes, in one statement: each delivered (and its stream's next pending
    /// event scheduled at once), or due again at its `next` (nil: its retries are used up). A delivery tells that the
    /// receiver is back: every other delivery waiting because it found no receiver is due at once (one the receiver
    /// refused keeps its back-off, or a bad event would be hammered). Returns how many were kept: none when the lease
    /// was lost (another node holds the endpoint). The lease is checked, not renewed (`renew`, once a batch).
    @discardableResult
    public func keep(_ outcomes: [WebhookOutcome], to target: WebhookTarget) async throws -> Int {
        guard !outcomes.isEmpty else { return 0 }
        let attempts = outcomes.map(\.attempt)
        let keep: PostgresQuery = """
            WITH held AS (
                SELECT name FROM webhook_endpoints WHERE name = \(target.name) AND lease = \(target.lease)
            ), outcome AS (
                SELECT * FROM unnest(
                    \(outcomes.map(\.delivery.event.eventId))::uuid[], \(attempts.map(\.at))::timestamptz[],
                    \(attempts.map(\.node))::text[], \(attempts.map(\.outcome.rawValue))::text[],
                    \(NullableArray(attempts.map(\.status)))::int[], \(attempts.map(\.latencyMilliseconds))::int[],
                    \(attempts.map(\.response))::text[], \(NullableArray(outcomes.map(\.next)))::timestamptz[],
                    \(attempts.map(\.foundNoReceiver))::bool[]
                ) AS o(event_id, at, node, outcome, status, latency_ms, response, next_attempt_at, receiver_absent)
            ), delivery AS (
                UPDATE webhook_deliveries d
                SET attempts = d.attempts + 1,
                    delivered_at = CASE WHEN o.outcome = 'delivered' THEN o.at END,
                    next_attempt_at = CASE WHEN o.outcome = 'delivered' THEN NULL ELSE o.next_attempt_at END,
                    given_up_at = CASE WHEN o.outcome <> 'delivered' AND o.next_attempt_at IS NULL THEN o.at END,
                    receiver_absent = o.receiver_absent
                FROM held, outcome o
                WHERE d.endpoint = held.name AND d.event_id = o.event_id AND d.delivered_at IS NULL
                RETURNING d.endpoint, d.event_id, d.kind, d.stream_id, d.version, o.outcome = 'delivered' AS delivered,
                          o.at, o.node, o.outcome, o.status, o.latency_ms, o.response
            ), next_of_stream AS (
                UPDATE webhook_deliveries d SET next_attempt_at = delivery.at
                FROM delivery
                WHERE delivery.delivered AND d.endpoint = delivery.endpoint AND d.kind = delivery.kind
                  AND d.stream_id = delivery.stream_id AND d.delivered_at IS NULL AND d.next_attempt_at IS NULL
                  AND d.given_up_at IS NULL
                  AND d.version = (SELECT min(p.version) FROM webhook_deliveries p
                                   WHERE p.endpoint = delivery.endpoint AND p.kind = delivery.kind
                                     AND p.stream_id = delivery.stream_id AND p.delivered_at IS NULL
                                     AND p.version > delivery.version)
            ), back AS (
                UPDATE webhook_deliveries d SET next_attempt_at = back.at
                FROM (SELECT endpoint, max(at) AS at FROM delivery WHERE delivered GROUP BY endpoint) back
                WHERE d.endpoint = back.endpoint AND d.delivered_at IS NULL AND d.receiver_absent
                  AND d.next_attempt_at > back.at AND d.event_id NOT IN (SELECT event_id FROM delivery)
            )
            INSERT INTO webhook_attempts (endpoint, event_id, attempted_at, node, outcome, status, latency_ms, response)
            SELECT endpoint, event_id, at, node, outcome, status, latency_ms, response FROM delivery
            RETURNING 1
            """
        return try await client.withConnection(within: Deadline.remaining) { [logger] connection in
            try await connection.transaction(logger: logger) { connection in
                try await connection.queryToEnd(WebhookQueueLock.shared, logger: logger)
                var kept = 0
                for try await _ in try await connection.statement(keep, logger: logger) { kept += 1 }
                return kept
            }
        }
    }

    /// Holds `target` until `until`; false when its lease was lost (another node took it after it ran out).
    public func renew(_ target: WebhookTarget, until: Date) async throws -> Bool {
        try await count("""
            UPDATE webhook_endpoints SET leased_until = \(until)
            WHERE name = \(target.name) AND lease = \(target.lease) RETURNING 1
            """) == 1
    }

    /// A delivery used up its retries: the endpoint is failing from `now` (nothing more is sent until an operator
    /// enables it; its queue is kept).
    public func markFailing(_ target: WebhookTarget, now: Date) async throws {
        _ = try await count("""
            UPDATE webhook_endpoints SET failing_since = \(now), lease = NULL, leased_by = NULL, leased_until = NULL
            WHERE name = \(target.name) AND lease = \(target.lease) AND failing_since IS NULL RETURNING 1
            """)
    }

    /// The receiver answered `410 Gone`: the endpoint is disabled at once.
    public func disableGone(_ target: WebhookTarget, now: Date) async throws {
        _ = try await count("""
            UPDATE webhook_endpoints
            SET enabled = false, disabled_reason = \("the receiver answered 410 Gone at \(RFC3339.format(now))"),
                lease = NULL, leased_by = NULL, leased_until = NULL
            WHERE name = \(target.name) AND lease = \(target.lease) RETURNING 1
            """)
    }

    /// Lets go of `target` (its round is over), so another node may take it at once.
    public func release(_ target: WebhookTarget) async throws {
        _ = try await count("""
            UPDATE webhook_endpoints SET lease = NULL, leased_by = NULL, leased_until = NULL
            WHERE name = \(target.name) AND lease = \(target.lease) RETURNING 1
            """)
    }

    /// Sends again, to endpoint `name`, the events of `selection` it selects — delivered before or not, recorded
    /// before it existed or after — due at `now`, each stream's in order. Returns how many were queued.
    public func replay(_ name: String, _ selection: WebhookReplay, now: Date) async throws -> Int {
        let condition: PostgresQuery = switch selection {
        case .event(let eventId): "e.event_id = \(eventId)"
        case .positions(let from, let to): "e.position BETWEEN \(from) AND \(to)"
        case .recorded(let from, let to): "e.recorded_at >= \(from) AND e.recorded_at < \(to)"
        }
        var bindings = condition.binds
        bindings.append(name)
        bindings.append(now)
        let sql = """
            WITH endpoint AS (SELECT name, event_selectors FROM webhook_endpoints WHERE name = $\(bindings.count - 1))
            INSERT INTO webhook_deliveries
                (endpoint, event_id, position, kind, stream_id, version, event_type, queued_at, next_attempt_at)
            SELECT w.name, e.event_id, e.position, e.kind, e.stream_id, e.version, e.type, $\(bindings.count), $\(bindings.count)
            FROM events e JOIN endpoint w ON webhook_selects(w.event_selectors, e.kind, e.type)
            WHERE \(condition.sql)
            ON CONFLICT (endpoint, event_id) DO UPDATE
                SET delivered_at = NULL, given_up_at = NULL, next_attempt_at = EXCLUDED.next_attempt_at
            RETURNING 1
            """
        guard try await endpoint(name, now: now) != nil else { throw WebhookEndpointError.notFound(name) }
        return try await count(PostgresQuery(unsafeSQL: sql, binds: bindings))
    }

    /// Runs a statement that returns a row per row it changed; returns how many (`SessionPool.countRows`).
    func count(_ query: PostgresQuery) async throws -> Int {
        try await client.countRows(query, logger: logger)
    }
}

/// Queueing an event and keeping the delivery of its stream's earlier one each decide from what the other committed:
/// the queueing leaves an event unscheduled while its stream has one pending, and a delivery schedules its stream's
/// next queued event. Run at once (each statement reading before the other committed) each missed the other, and
/// the stream stopped for good. So the queueing takes this lock alone for its transaction and a batch's keeping takes
/// it shared (batches of endpoints do not wait for one another), each before the statement that decides: in READ
/// COMMITTED that statement then reads what the other committed.
enum WebhookQueueLock {
    /// "webhookq"; a one-key advisory lock, as the sealer's and the migrator's.
    static let key: Int64 = 0x7765_6268_6F6F_6B71
    static var alone: PostgresQuery { "SELECT pg_advisory_xact_lock(\(key))" }
    static var shared: PostgresQuery { "SELECT pg_advisory_xact_lock_shared(\(key))" }
}

/// An endpoint this node holds, to send to: where, and the secrets that sign (the newest first).
public struct WebhookTarget: Sendable {
    public var name: String
    public var url: String
    public var secrets: [WebhookSecret]
    public var lease: UUID
}

/// One event to send, as the endpoint is sent it.
public struct WebhookDelivery: Sendable {
    public var event: StoredEvent
    /// Attempts made before this one.
    public var attempts: Int
    /// The JSON body (`WebhookBody`), the same at every attempt.
    public var body: [UInt8]

    /// The `webhook-id`: the event's id, the same at every attempt and every replay — the receiver's key to ignore a
    /// delivery it has had.
    public var messageId: String { "msg_" + event.eventId.lowercasedText.replacingOccurrences(of: "-", with: "") }
}

/// An attempt of a delivery, and when to try it again (nil after a delivery, or when its retries are used up).
public struct WebhookOutcome: Sendable {
    public var delivery: WebhookDelivery
    public var attempt: WebhookAttempt
    public var next: Date?

    public init(delivery: WebhookDelivery, attempt: WebhookAttempt, next: Date?) {
        self.delivery = delivery
        self.attempt = attempt
        self.next = next
    }
}

/// What one attempt came to.
public struct WebhookAttempt: Sendable {
    public enum Outcome: String, Sendable {
        /// 2xx.
        case delivered
        /// Another status.
        case failed
        /// 410: the endpoint is disabled.
        case gone
        /// No answer within the timeout.
        case timeout
        /// No connection, or it broke.
        case unreachable
        /// The host's address is loopback, link-local or private, and not allowed.
        case refusedAddress = "refused_address"
    }

    public var at: Date
    public var node: String
    public var outcome: Outcome
    public var status: Int?
    public var latencyMilliseconds: Int
    /// The receiver's first bytes (at most 512), or what went wrong.
    public var response: String

    /// No receiver answered: no connection, no answer in time, or a gateway's 502, 503 or 504.
    var foundNoReceiver: Bool {
        outcome == .unreachable || outcome == .timeout || [502, 503, 504].contains(status ?? 0)
    }

    public init(at: Date, node: String, outcome: Outcome, status: Int?, latencyMilliseconds: Int, response: String) {
        self.at = at
        self.node = node
        self.outcome = outcome
        self.status = status
        self.latencyMilliseconds = latencyMilliseconds
        self.response = response
    }
}

/// Which events a replay sends again.
public enum WebhookReplay: Sendable, Hashable {
    case event(UUID)
    /// Feed positions, both included.
    case positions(from: Int64, to: Int64)
    /// Recorded at or after `from`, before `to`.
    case recorded(from: Date, to: Date)
}
