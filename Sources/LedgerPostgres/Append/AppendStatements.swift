import Foundation
import LedgerCore
import Logging
import PostgresNIO

/// Everything an append decides on, read by one statement (one snapshot): the stream's head, the database clock,
/// which of the new event ids are already stored, the order's projection row, the transaction bindings the new
/// events name, and the token epoch.
struct AppendSnapshot: Sendable {
    let orderId: String
    /// The stream's version (0: no stream yet) and whether its row exists.
    let version: Int
    let streamExists: Bool
    /// The hash of the order's last event, which the new events chain onto.
    let lastHash: [UInt8]?
    /// The database's clock at the read: every event of the batch is recorded at this time. Times within one order
    /// never go backwards: a later writer reads after an earlier one committed, or loses the version check.
    let recordedAt: Date
    /// The new event ids already stored, with where they landed and whether they match the new events exactly.
    let stored: [StoredEventId]
    /// The order as projected (nil: no order yet).
    let order: Order?
    /// Who holds each transactionId the new events name.
    let bindings: [String: TransactionBinding]
    /// The token epoch (schema/009), which confirms a request's cached token before anything is written: the one
    /// read, or, from memory, the one the request's cached token was read under (nil: no token to confirm); a
    /// snapshot from memory is written by the grouped write, which checks it and the recorded time itself
    /// (AppendStatements+Group.swift).
    let tokenEpoch: Int64?

    /// Where the domain's decision of the batch starts (`OrderBatch`).
    var start: OrderBatch.Start {
        OrderBatch.Start(orderId: orderId, order: order, version: version, recordedAt: recordedAt, bindings: bindings)
    }

    /// Any snapshot: the write statement's text does not depend on the values (see `StatementShape`).
    static let sample = AppendSnapshot(
        orderId: "", version: 0, streamExists: false, lastHash: nil, recordedAt: Date(timeIntervalSince1970: 0),
        stored: [], order: nil, bindings: [:], tokenEpoch: nil)
}

extension AppendSnapshot {
    /// The snapshot an append of `events` decides on without reading (`RecentStreams`): the stream this node's last
    /// write left, or, for a batch that creates its order, no stream yet. Nil when neither applies, or the node has
    /// not read the database's clock yet.
    static func remembered(
        _ orderId: String, events: [NewEvent], tokenEpoch: Int64?, in memory: RecentStreams
    ) -> AppendSnapshot? {
        guard let now = memory.databaseClock() else { return nil }
        if let stream = memory.stream(of: orderId) {
            let bindings = stream.order.transactionId.map { transactionId in
                [transactionId: TransactionBinding(
                    transactionId: transactionId, orderId: orderId, granted: stream.order.grantedAt != nil)]
            }
            return AppendSnapshot(
                orderId: orderId, version: stream.version, streamExists: true, lastHash: stream.lastHash,
                recordedAt: max(now, stream.recordedAt), stored: [], order: stream.order, bindings: bindings ?? [:],
                tokenEpoch: tokenEpoch)
        }
        guard events.first?.type == EventType.orderCreated.rawValue else { return nil }
        return AppendSnapshot(
            orderId: orderId, version: 0, streamExists: false, lastHash: nil, recordedAt: now, stored: [],
            order: nil, bindings: [:], tokenEpoch: tokenEpoch)
    }
}

struct StoredEventId {
    let event: AppendedEvent
    let orderId: String
    let sameContent: Bool
}

/// The two statements of an append, on one screen: one read, one write. Between them the domain decides in Swift.
/// No transaction is needed: the write is one statement, and every part of it is gated on the stream's version still
/// being the one read — a writer that lost the race writes nothing, takes no positions, and reads again.
struct AppendStatements {
    let logger: Logger

    static func readQuery(_ orderId: String, events: [NewEvent], transactionIds: [String]) -> PostgresQuery {
        """
        SELECT clock_timestamp(), s.version, s.last_hash,
               stored.ids, stored.orders, stored.versions, stored.positions, stored.same,
               bound.ids, bound.orders, bound.granted, (SELECT epoch FROM api_token_epoch),
               \(unescaped: OrderRows.orderColumnsOfO)
        FROM (VALUES (\(orderId))) AS wanted(order_id)
        LEFT JOIN streams s ON s.kind = 'order' AND s.stream_id = wanted.order_id
        LEFT JOIN orders o USING (order_id)
        CROSS JOIN LATERAL (
            SELECT array_agg(e.event_id) AS ids, array_agg(e.stream_id) AS orders, array_agg(e.version) AS versions,
                   array_agg(e.position) AS positions,
                   array_agg(e.kind = 'order' AND e.stream_id = \(orderId) AND e.type = n.type AND e.data = n.data::jsonb)
                       AS same
            FROM unnest(\(events.map(\.eventId))::uuid[], \(events.map(\.type))::text[],
                        \(events.map(\.data.canonicalJSON))::text[]) AS n(event_id, type, data)
            JOIN events e USING (event_id)
        ) stored
        CROSS JOIN LATERAL (
            SELECT array_agg(t.transaction_id) AS ids, array_agg(t.order_id) AS orders,
                   array_agg(t.granted_at IS NOT NULL) AS granted
            FROM order_transactions t WHERE t.transaction_id = ANY(\(transactionIds)::text[])
        ) bound
        """
    }

    enum ReadShape: StatementShape {
        static let name = "ledger.append-read"
        static let sql = readQuery("", events: [], transactionIds: []).sql
    }

    func read(_ orderId: String, events: [NewEvent], transactionIds: [String], on connection: PostgresConnection)
        async throws -> AppendSnapshot
    {
        let rows = try await connection.query(
            Self.readQuery(orderId, events: events, transactionIds: transactionIds), preparedAs: ReadShape.self,
            logger: logger)
        for try await row in rows {
            let columns = row.makeRandomAccess()
            let version = try columns[1].decode(Int?.self)
            let ids = try columns[3].decode([UUID]?.self) ?? []
            let owners = try columns[4].decode([String]?.self) ?? []
            let versions = try columns[5].decode([Int]?.self) ?? []
            let positions = try columns[6].decode([Int64]?.self) ?? []
            let same = try columns[7].decode([Bool]?.self) ?? []
            let stored = ids.indices.map { index in
                StoredEventId(
                    event: AppendedEvent(eventId: ids[index], version: versions[index], position: positions[index]),
                    orderId: owners[index], sameContent: same[index])
            }
            let boundIds = try columns[8].decode([String]?.self) ?? []
            let boundOrders = try columns[9].decode([String]?.self) ?? []
            let granted = try columns[10].decode([Bool]?.self) ?? []
            var bindings: [String: TransactionBinding] = [:]
            for index in boundIds.indices {
                bindings[boundIds[index]] = TransactionBinding(
                    transactionId: boundIds[index], orderId: boundOrders[index], granted: granted[index])
            }
            return AppendSnapshot(
                orderId: orderId, version: version ?? 0, streamExists: version != nil,
                lastHash: try columns[2].decode(ByteBuffer?.self).map { Array($0.readableBytesView) },
                recordedAt: try columns[0].decode(Date.self), stored: stored,
                order: try OrderRows.decodeOrder(columns, from: 12), bindings: bindings,
                tokenEpoch: try columns[11].decode(Int64.self))
        }
        throw AppendReadReturnedNothing(orderId: orderId)
    }

    /// The write of `events` sealed as `sealed`, after the read that gave `snapshot`.
    static func writeQuery(
        _ events: [NewEvent], sealed: SealedEvents, after snapshot: AppendSnapshot, projecting order: Order?,
        queued: Bool
    ) -> PostgresQuery {
        let newVersion = snapshot.version + events.count
        let projected = order != nil
        let transactionId = order?.transactionId
        let recordedAt = Timestamp(snapshot.recordedAt)
        return """
        WITH head AS (
            SELECT 1 FROM streams
            WHERE kind = 'order' AND stream_id = \(snapshot.orderId) AND version = \(snapshot.version)
                  AND \(snapshot.streamExists)
            FOR UPDATE \(unescaped: queued ? "" : "NOWAIT")
        ), moved AS (
            UPDATE streams SET version = \(newVersion), last_hash = \(sealed.lastHash)::bytea
            WHERE kind = 'order' AND stream_id = \(snapshot.orderId) AND EXISTS (SELECT 1 FROM head)
            RETURNING 1
        ), created AS (
            INSERT INTO streams (kind, stream_id, version, last_hash)
            SELECT 'order', \(snapshot.orderId), \(newVersion), \(sealed.lastHash)::bytea
            WHERE NOT \(snapshot.streamExists)
            ON CONFLICT (kind, stream_id) DO NOTHING
            RETURNING 1
        ), won AS (
            SELECT 1 FROM moved UNION ALL SELECT 1 FROM created
        ), appended AS (
            INSERT INTO events (kind, stream_id, version, event_id, type, data, metadata, occurred_at, recorded_at, canonical, hash)
            SELECT 'order', \(snapshot.orderId), \(snapshot.version) + n.ordinal, n.event_id, n.type, n.data::jsonb,
                   n.metadata::jsonb, NULLIF(n.occurred_at, '')::timestamptz, \(recordedAt),
                   n.canonical, n.hash
            FROM unnest(\(events.map(\.eventId))::uuid[], \(events.map(\.type))::text[],
                        \(events.map(\.data.canonicalJSON))::text[], \(events.map(\.metadata.canonicalJSON))::text[],
                        \(sealed.occurredAt)::text[], \(sealed.canonicals)::bytea[], \(sealed.hashes)::bytea[])
                 WITH ORDINALITY AS n(event_id, type, data, metadata, occurred_at, canonical, hash, ordinal)
            WHERE EXISTS (SELECT 1 FROM won)
            ORDER BY n.ordinal
            RETURNING event_id, version, position
        ), projected AS (
            \(unescaped: OrderRows.upsertOrderSQL)
            SELECT \(orderRow: order)
            WHERE \(projected) AND EXISTS (SELECT 1 FROM won)
            \(unescaped: OrderRows.upsertOrderConflictSQL)
        ), bound AS (
            INSERT INTO order_transactions AS t (transaction_id, order_id, account_id, granted_at, finished_at, refunded_at)
            SELECT \(transactionId)::text, \(order?.orderId)::text, \(order?.accountId)::text,
                   \(order?.grantedAt.timestamp)::timestamptz, \(order?.finishedAt.timestamp)::timestamptz,
                   \(order?.refundedAt.timestamp)::timestamptz
            WHERE \(transactionId)::text IS NOT NULL AND EXISTS (SELECT 1 FROM won)
            ON CONFLICT (transaction_id) DO UPDATE SET
                granted_at = EXCLUDED.granted_at, finished_at = EXCLUDED.finished_at, refunded_at = EXCLUDED.refunded_at
                WHERE t.order_id = EXCLUDED.order_id
            RETURNING 1
        )
        SELECT a.event_id, a.version, a.position,
               ledger_append_requires(\(transactionId)::text IS NULL OR EXISTS (SELECT 1 FROM bound),
                                      'transaction ' || \(transactionId)::text || ' claimed by another order')
        FROM appended a
        ORDER BY a.version
        """
    }

    enum WriteShape: StatementShape {
        static let name = "ledger.append-write"
        static let sql = writeQuery([], sealed: SealedEvents(), after: .sample, projecting: nil, queued: false).sql
    }

    enum QueuedWriteShape: StatementShape {
        static let name = "ledger.append-write-queued"
        static let sql = writeQuery([], sealed: SealedEvents(), after: .sample, projecting: nil, queued: true).sql
    }

    /// Writes the events after `snapshot.version`, chained onto its last hash, with the order's new projection rows;
    /// returns where they landed and the stream's new last hash. Returns nil when another writer moved the stream
    /// since the read (nothing was written). A transaction another order claimed since the read aborts the
    /// statement (schema/008): the caller reads again either way.
    ///
    /// Unqueued, the stream row is locked NOWAIT: a row another writer holds (one queued in its transaction) fails
    /// the statement at once (55P03) instead of waiting. Outside a transaction a statement that waits past the
    /// request's deadline would still commit when the lock is freed, after the caller was answered 503; queued, the
    /// write waits its turn inside a transaction, which an abandoned connection never commits.
    func write(
        _ events: [NewEvent], after snapshot: AppendSnapshot, projecting order: Order?, queued: Bool,
        on connection: PostgresConnection
    ) async throws -> (events: [AppendedEvent], lastHash: [UInt8])? {
        let sealed = SealedEvents(events, after: snapshot)
        let query = Self.writeQuery(events, sealed: sealed, after: snapshot, projecting: order, queued: queued)
        let rows = try await (queued
            ? connection.query(query, preparedAs: QueuedWriteShape.self, logger: logger)
            : connection.query(query, preparedAs: WriteShape.self, logger: logger))
        var appended: [AppendedEvent] = []
        for try await row in rows {
            let (eventId, version, position, _) = try row.decode((UUID, Int, Int64, Bool).self)
            appended.append(AppendedEvent(eventId: eventId, version: version, position: position))
        }
        guard !appended.isEmpty, let lastHash = sealed.lastHash else { return nil }
        return (appended, Array(lastHash.readableBytesView))
    }

    /// Takes the order's append lock for the rest of the transaction: after losing a race, appends to one order
    /// queue here instead of racing again (64 writers on one order would otherwise mostly lose every round).
    func queue(for orderId: String, on connection: PostgresConnection) async throws {
        try await connection.queryToEnd(
            "SELECT pg_advisory_xact_lock(\(Self.appendLockSpace), hashtext(\(orderId)))", logger: logger)
    }

    /// The first key of the two-key advisory locks appends queue on ("OLap"); the sealer and the migrator use
    /// one-key locks, a separate key space.
    static let appendLockSpace: Int32 = 0x4F4C_6170
}

/// The events' canonical bytes and hashes, each chained onto the one before, the first onto the stream's last hash.
struct SealedEvents {
    var canonicals: [ByteBuffer] = []
    var hashes: [ByteBuffer] = []
    var occurredAt: [String] = []
    var lastHash: ByteBuffer? { hashes.last }

    /// No events: for the statement's text (`WriteShape`).
    init() {}

    init(_ events: [NewEvent], after snapshot: AppendSnapshot) {
        occurredAt = events.map { $0.occurredAt.map(RFC3339.format) ?? "" }
        var previous = snapshot.lastHash
        for (offset, event) in events.enumerated() {
            let canonical = EventSeal.canonicalBytes(
                stream: .order(snapshot.orderId), version: snapshot.version + offset + 1, eventId: event.eventId,
                type: event.type, data: event.data, metadata: event.metadata, occurredAt: event.occurredAt,
                recordedAt: snapshot.recordedAt)
            let hash = EventSeal.hash(previous: previous, canonical: canonical)
            canonicals.append(ByteBuffer(bytes: canonical))
            hashes.append(ByteBuffer(bytes: hash))
            previous = hash
        }
    }
}

/// The append's read answered no row: PostgreSQL broke its own contract; the append is refused (a 500 for this
/// request, never a trap that ends the service).
struct AppendReadReturnedNothing: Error, CustomStringConvertible {
    let orderId: String
    var description: String { "reading the stream of order \(orderId) returned no row" }
}
