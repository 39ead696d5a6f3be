import Foundation
import LedgerCore
import Logging
import PostgresNIO

/// The feed's consumers (`LedgerDatabase.consumers`): the one owner of `feed_consumers` (schema/022). A round of a
/// consumer takes it under a lease, reads pages of the feed after its position (every kind of stream; the feed never
/// skips an event, `EventStore.readFeed`), hands each page to the consumer and then moves the position past it.
///
/// One node at a time: a round takes the consumer only when nobody else holds it or their lease ran out, and renews
/// the lease each time it advances; an advance whose lease another node has taken since writes nothing, and the round
/// ends. A node that dies frees its consumers when their leases run out, and the next node goes on from the last
/// position written: what the dead node handled after it is handled again (at least once), never skipped. Times come
/// from the caller's clock, as the recovery schedule's do, so a test passes a lease's end without waiting for it.
public struct FeedConsumers: Sendable {
    let pools: EventLoopPools
    let logger: Logger

    var client: SessionPool { pools.current }

    /// How long a round holds its consumer between two advances.
    public static let defaultLease: Duration = .seconds(30)

    /// One round of `consumer` by `node`: pages of at most `pageSize` events, until a page is empty or `maximumPages`
    /// were handled. Returns how many events it handled, or nil when another node holds the consumer. A handling that
    /// throws ends the round with its error, its page not advanced past. (A page may be short while more follow: the
    /// feed's horizon stops below any transaction of the cluster that ended while the page was read, which on a busy
    /// cluster is often; only an empty page ends the round.)
    public func run(
        _ consumer: FeedConsumer, node: String, now: @Sendable () -> Date = { Date() }, lease: Duration = defaultLease,
        pageSize: Int = 100, maximumPages: Int = 100
    ) async throws -> Int? {
        let holder = UUID()
        guard var cursor = try await claim(consumer.name, lease: holder, node: node, until: now() + lease.seconds, now: now())
        else { return nil }
        let store = EventStore(client: client, logger: logger, confirmsTokens: false)
        var handled = 0
        for _ in 0..<maximumPages {
            // Before each page: the horizon of one statement may stop short of what the next one passes. And the
            // page leaves out what is to be passed over: its horizon, read later, may be past the pass-over's.
            let since = consumer.passesOverRecordedBefore
            if let since, let passed = try await passOver(consumer.name, lease: holder, after: cursor, recordedBefore: since) {
                cursor = passed
            }
            let page = try await store.readFeed(after: cursor, limit: pageSize, recordedFrom: since)
            guard let last = page.last?.cursor else { break }
            let events = page.map(\.event)
            let advance = Advance(
                name: consumer.name, lease: holder, to: last, count: events.count, until: now() + lease.seconds)
            let advanced: Bool
            switch consumer.handling {
            case .thenAdvance(let handle):
                try await handle(events)
                advanced = try await self.advance(advance)
            case .inTransaction(let handle):
                advanced = try await client.withTransaction(logger: logger) { connection in
                    try await handle(events, connection)
                    return try await self.advance(advance, on: connection)
                }
            }
            guard advanced else {
                logger.warning("feed consumer \(consumer.name): another node took it over; this round ends")
                break
            }
            handled += events.count
            cursor = last
        }
        return handled
    }

    /// Takes the consumer for `lease` (registering it on first use, at the start of the feed) unless another node's
    /// lease holds it at `now`; returns its position (nil inside: the start) — nil when it is held. A node keeps its
    /// consumers from round to round (each round renews the lease), so another node takes one only once its holder
    /// stopped renewing: after a crash, within the lease.
    private func claim(_ name: String, lease: UUID, node: String, until: Date, now: Date) async throws -> FeedCursor?? {
        guard FeedConsumer.isValidName(name) else { throw InvalidConsumerName(name: name) }
        for try await (transactionId, position) in try await client.query(
            """
            INSERT INTO feed_consumers AS c (name, lease, leased_by, leased_until)
            VALUES (\(name), \(lease), \(node), \(until))
            ON CONFLICT (name) DO UPDATE
                SET lease = EXCLUDED.lease, leased_by = EXCLUDED.leased_by, leased_until = EXCLUDED.leased_until
                WHERE c.leased_until IS NULL OR c.leased_until <= \(now) OR c.leased_by = EXCLUDED.leased_by
            RETURNING c.transaction_xid::text, c.position
            """, logger: logger
        ).decode((String?, Int64?).self) {
            guard let transactionId, let position else { return .some(nil) }
            return FeedCursor(transactionId: transactionId, position: position)
        }
        return nil
    }

    /// Moves the consumer past the events after `cursor` that come before the first recorded at or after `since` (an
    /// SQL time; NULL: all of them), as the feed orders them and below its horizon, as a page read would see them:
    /// events its handling would do nothing with, not read, in one statement. The position it moved to, or nil when
    /// there was nothing to pass (the next event is one to handle, or none) or the lease was lost.
    ///
    /// The horizon (a read of `pg_locks`, ~3 ms) is asked only when the next event is one to pass; the scans run on
    /// the feed's index, and behind a long run of events to pass the first walks it once, in PostgreSQL (1,000,000 in
    /// 0.8 s), where the pages walked it in Swift, 100 events a page (BENCHMARKS.md, stop 51).
    private func passOver(_ name: String, lease: UUID, after cursor: FeedCursor?, recordedBefore since: String) async throws -> FeedCursor? {
        let after: PostgresQuery = "(\(cursor?.transactionId ?? "0")::xid8, \(cursor?.position ?? 0))"
        var bindings = after.binds
        bindings.append(name)
        bindings.append(lease)
        let sql = """
            WITH horizon AS MATERIALIZED (
                SELECT CASE WHEN (SELECT coalesce(e.recorded_at < (\(since)), true) FROM events e
                                  WHERE (e.transaction_xid, e.position) > \(after.sql)
                                  ORDER BY e.transaction_xid, e.position LIMIT 1)
                            THEN \(EventStore.feedHorizon) END AS xid
            ),
            wanted AS MATERIALIZED (
                SELECT e.transaction_xid, e.position FROM events e
                WHERE (e.transaction_xid, e.position) > \(after.sql) AND e.transaction_xid < (SELECT xid FROM horizon)
                  AND e.recorded_at >= (\(since))
                ORDER BY e.transaction_xid, e.position LIMIT 1
            ), passed AS (
                SELECT p.transaction_xid, p.position FROM wanted w CROSS JOIN LATERAL (
                    SELECT e.transaction_xid, e.position FROM events e
                    WHERE (e.transaction_xid, e.position) > \(after.sql)
                      AND (e.transaction_xid, e.position) < (w.transaction_xid, w.position)
                    ORDER BY e.transaction_xid DESC, e.position DESC LIMIT 1
                ) p
                UNION ALL (
                    SELECT e.transaction_xid, e.position FROM events e
                    WHERE NOT EXISTS (SELECT 1 FROM wanted)
                      AND (e.transaction_xid, e.position) > \(after.sql) AND e.transaction_xid < (SELECT xid FROM horizon)
                    ORDER BY e.transaction_xid DESC, e.position DESC LIMIT 1
                )
            )
            UPDATE feed_consumers c SET transaction_xid = passed.transaction_xid, position = passed.position
            FROM passed WHERE c.name = $\(bindings.count - 1) AND c.lease = $\(bindings.count)
            RETURNING c.transaction_xid::text, c.position
            """
        for try await (transactionId, position) in try await client.query(
            PostgresQuery(unsafeSQL: sql, binds: bindings), logger: logger
        ).decode((String, Int64).self) {
            return FeedCursor(transactionId: transactionId, position: position)
        }
        return nil
    }

    private struct Advance {
        let name: String
        let lease: UUID
        let to: FeedCursor
        let count: Int
        let until: Date

        var query: PostgresQuery {
            """
            UPDATE feed_consumers
            SET transaction_xid = \(to.transactionId)::xid8, position = \(to.position), handled = handled + \(count),
                advanced_at = now(), leased_until = \(until)
            WHERE name = \(name) AND lease = \(lease)
            RETURNING 1
            """
        }
    }

    /// Moves the consumer past the page, if this round still holds it; whether it did.
    private func advance(_ advance: Advance) async throws -> Bool {
        try await client.withConnection { connection in try await self.advance(advance, on: connection) }
    }

    private func advance(_ advance: Advance, on connection: PostgresConnection) async throws -> Bool {
        var rows = 0
        for try await _ in try await connection.statement(advance.query, logger: logger) { rows += 1 }
        return rows == 1
    }

    /// Every consumer, by name, with its lag behind the feed.
    public func list() async throws -> [FeedConsumerStatus] {
        try await client.query(
            """
            SELECT c.name, c.position, c.handled, c.leased_by, c.leased_until, c.advanced_at,
                   (SELECT count(*) FROM events e
                    WHERE (e.transaction_xid, e.position) > (coalesce(c.transaction_xid, '0'), coalesce(c.position, 0))),
                   coalesce(extract(epoch FROM now() - (
                       SELECT e.recorded_at FROM events e
                       WHERE (e.transaction_xid, e.position) > (coalesce(c.transaction_xid, '0'), coalesce(c.position, 0))
                       ORDER BY e.transaction_xid, e.position LIMIT 1))::float8, 0)
            FROM feed_consumers c ORDER BY c.name
            """, .reads, logger: logger
        ) { rows in
            var consumers: [FeedConsumerStatus] = []
            for try await (name, position, handled, leasedBy, leasedUntil, advancedAt, lagEvents, lagSeconds) in rows.decode(
                (String, Int64?, Int64, String?, Date?, Date?, Int64, Double).self)
            {
                consumers.append(FeedConsumerStatus(
                    name: name, position: position, handled: handled, lagEvents: lagEvents, lagSeconds: max(0, lagSeconds),
                    leasedBy: leasedBy, leasedUntil: leasedUntil, advancedAt: advancedAt))
            }
            return consumers
        }
    }
}

/// A consumer name the schema would refuse.
public struct InvalidConsumerName: Error, CustomStringConvertible {
    public let name: String
    public var description: String {
        "consumer name \(name) must be lower case letters, digits, _ . -, starting with a letter, at most 63 characters"
    }
}
