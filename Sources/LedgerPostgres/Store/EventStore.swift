import Foundation
import LedgerCore
import Logging
import PostgresNIO

/// The append-only event store: one stream per order, on PostgreSQL.
///
/// The write path, in one transaction:
/// 1. lock the order's stream row and bump its version (writers to other orders never wait);
/// 2. answer idempotent retries: if the event ids are stored with the same content, return their original
///    versions and positions and write nothing;
/// 3. check the expected version — before any position is taken, so losers burn no sequence values;
/// 4. run the inline projection (which may refuse);
/// 5. insert the events.
/// A unique violation means a concurrent append won a race (same event id on another order, or a projection's
/// unique row); the whole append is run again and then sees the winner's committed state.
public struct EventStore: Sendable {
    public let client: PostgresClient
    public let logger: Logger

    /// How many times an append is rerun after losing a race before the error is passed on.
    static let raceRetries = 5

    public init(client: PostgresClient, logger: Logger = Logger(label: "ledger.store")) {
        self.client = client
        self.logger = logger
    }

    /// Appends `events` to the order's stream, all or nothing. See the type's documentation for the steps.
    /// The projection's result is returned with the append's; it is nil for a replay (the projection does not run).
    public func append<Projected: Sendable>(
        to orderId: String,
        expectedVersion: ExpectedVersion = .any,
        events: [NewEvent],
        projection: @escaping InlineProjection<Projected>
    ) async throws -> (result: AppendResult, projected: Projected?) {
        guard !events.isEmpty else { throw EventStoreError.emptyAppend }
        var attempt = 0
        while true {
            do {
                return try await appendOnce(to: orderId, expectedVersion: expectedVersion, events: events, projection: projection)
            } catch where attempt < Self.raceRetries && Self.isLostRace(error) {
                attempt += 1
            }
        }
    }

    /// Appends without a projection.
    public func append(to orderId: String, expectedVersion: ExpectedVersion = .any, events: [NewEvent]) async throws -> AppendResult {
        try await append(to: orderId, expectedVersion: expectedVersion, events: events) { _, _ in () }.result
    }

    private static func isLostRace(_ error: any Error) -> Bool {
        if underlyingError(error) is AppendRaceLost { return true }
        return [SQLStates.uniqueViolation, SQLStates.deadlockDetected, SQLStates.serializationFailure].contains(sqlState(of: error))
    }

    /// A replay found inside the transaction: thrown to roll back the stream lock, then returned.
    private struct Replay: Error { let result: AppendResult }

    private func appendOnce<Projected: Sendable>(
        to orderId: String,
        expectedVersion: ExpectedVersion,
        events: [NewEvent],
        projection: @escaping InlineProjection<Projected>
    ) async throws -> (result: AppendResult, projected: Projected?) {
        do {
            return try await client.withConnection(within: Deadline.request) { connection in
                try await connection.withTransaction(logger: logger) { connection in
                    let (current, recordedAt, lastHash) = try await lockStream(orderId, adding: events.count, on: connection)
                    if let replay = try await storedResult(of: events, for: orderId, on: connection) {
                        throw Replay(result: replay)
                    }
                    guard expectedVersion.admits(current) else {
                        throw EventStoreError.versionConflict(orderId: orderId, expected: expectedVersion, actual: current)
                    }
                    let context = AppendContext(
                        connection: connection, orderId: orderId, currentVersion: current, recordedAt: recordedAt, logger: logger)
                    let projected = try await projection(context, events)
                    let appended = try await insert(
                        events, into: orderId, after: current, lastHash: lastHash, recordedAt: recordedAt, on: connection)
                    return (AppendResult(orderId: orderId, events: appended, isReplay: false), projected)
                }
            }
        } catch {
            let cause = underlyingError(error)
            if let replay = cause as? Replay { return (replay.result, nil) }
            throw cause
        }
    }

    /// Locks the stream row (creating it for a new order) and bumps its version by `count` in one statement.
    /// Returns the version before the bump, the database clock after the lock was granted (so times within one
    /// order never go backwards) and the hash of the order's last event, which the new events chain onto.
    ///
    /// Everything comes from the locked row itself. Under READ COMMITTED, a statement that waited for the lock
    /// updates the newest row version, but any other table it reads (a subquery on `events`) is read as of the
    /// snapshot taken before the wait — it would miss the event the lock holder just committed (schema/007).
    private func lockStream(
        _ orderId: String, adding count: Int, on connection: PostgresConnection
    ) async throws -> (version: Int, now: Date, lastHash: [UInt8]?) {
        let rows = try await connection.query(
            """
            INSERT INTO streams AS s (order_id, version) VALUES (\(orderId), \(count))
            ON CONFLICT (order_id) DO UPDATE SET version = s.version + EXCLUDED.version
            RETURNING s.version - \(count), clock_timestamp(), s.last_hash
            """, logger: logger)
        for try await (previous, now, lastHash) in rows.decode((Int, Date, ByteBuffer?).self) {
            return (previous, now, lastHash.map { Array($0.readableBytesView) })
        }
        throw StreamLockReturnedNothing(orderId: orderId)
    }

    /// The original result when every event id is already stored with the same order, type and data;
    /// nil when none is stored; an idempotency conflict otherwise.
    private func storedResult(of events: [NewEvent], for orderId: String, on connection: PostgresConnection) async throws -> AppendResult? {
        let rows = try await connection.query(
            """
            SELECT e.event_id, e.order_id, e.version, e.position,
                   (e.order_id = \(orderId) AND e.type = n.type AND e.data = n.data::jsonb)
            FROM unnest(\(events.map(\.eventId))::uuid[], \(events.map(\.type))::text[], \(events.map(\.data.canonicalJSON))::text[])
                 AS n(event_id, type, data)
            JOIN events e USING (event_id)
            """, logger: logger)
        var stored: [UUID: AppendedEvent] = [:]
        for try await (eventId, storedOrderId, version, position, same) in rows.decode((UUID, String, Int, Int64, Bool).self) {
            guard same else { throw EventStoreError.idempotencyConflict(eventId: eventId, storedOrderId: storedOrderId) }
            stored[eventId] = AppendedEvent(eventId: eventId, version: version, position: position)
        }
        if stored.isEmpty { return nil }
        // A batch is replayed whole or not at all: a request that mixes stored and new events is a different request.
        if let firstNew = events.first(where: { stored[$0.eventId] == nil }) {
            throw EventStoreError.idempotencyConflict(eventId: firstNew.eventId, storedOrderId: orderId)
        }
        let replayed = events.compactMap { stored[$0.eventId] }
        return AppendResult(orderId: orderId, events: replayed, isReplay: true)
    }

    /// Inserts the events after version `current`, each sealed onto the chain that ends in `lastHash`, and moves the
    /// stream's `last_hash` to the last of them — one statement, on the stream row this transaction has locked.
    private func insert(
        _ events: [NewEvent], into orderId: String, after current: Int, lastHash: [UInt8]?, recordedAt: Date,
        on connection: PostgresConnection
    ) async throws -> [AppendedEvent] {
        let occurredAt = events.map { $0.occurredAt.map(RFC3339.format) ?? "" }
        var previous = lastHash
        var canonicals: [ByteBuffer] = []
        var hashes: [ByteBuffer] = []
        for (offset, event) in events.enumerated() {
            let canonical = EventSeal.canonicalBytes(
                orderId: orderId, version: current + offset + 1, eventId: event.eventId, type: event.type,
                data: event.data, metadata: event.metadata, occurredAt: event.occurredAt, recordedAt: recordedAt)
            let hash = EventSeal.hash(previous: previous, canonical: canonical)
            canonicals.append(ByteBuffer(bytes: canonical))
            hashes.append(ByteBuffer(bytes: hash))
            previous = hash
        }
        let rows = try await connection.query(
            """
            WITH head AS (UPDATE streams SET last_hash = \(hashes.last) WHERE order_id = \(orderId))
            INSERT INTO events (order_id, version, event_id, type, data, metadata, occurred_at, recorded_at, canonical, hash)
            SELECT \(orderId), \(current) + n.ordinal, n.event_id, n.type, n.data::jsonb, n.metadata::jsonb,
                   NULLIF(n.occurred_at, '')::timestamptz, \(Timestamp(recordedAt)), n.canonical, n.hash
            FROM unnest(\(events.map(\.eventId))::uuid[], \(events.map(\.type))::text[],
                        \(events.map(\.data.canonicalJSON))::text[], \(events.map(\.metadata.canonicalJSON))::text[],
                        \(occurredAt)::text[], \(canonicals)::bytea[], \(hashes)::bytea[])
                 WITH ORDINALITY AS n(event_id, type, data, metadata, occurred_at, canonical, hash, ordinal)
            ORDER BY n.ordinal
            RETURNING event_id, version, position
            """, logger: logger)
        var appended: [AppendedEvent] = []
        for try await (eventId, version, position) in rows.decode((UUID, Int, Int64).self) {
            appended.append(AppendedEvent(eventId: eventId, version: version, position: position))
        }
        return appended.sorted { $0.version < $1.version }
    }
}
