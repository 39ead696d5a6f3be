import Foundation
import LedgerCore
import PostgresNIO

/// An append decided from what this node remembers (`RecentStreams`), sealed and waiting to be written together
/// with others of its kind (`AppendGroup`).
struct GroupedWrite<Projection: StreamProjection>: Sendable {
    let events: [NewEvent]
    /// From memory: the write checks its token epoch and recorded time itself.
    let snapshot: AppendSnapshot<Projection.Read>
    /// What the decision leaves, written with the events.
    let written: Projection.Written
    let sealed: SealedEvents

    init(events: [NewEvent], snapshot: AppendSnapshot<Projection.Read>, written: Projection.Written) {
        self.events = events
        self.snapshot = snapshot
        self.written = written
        self.sealed = SealedEvents(
            events, stream: snapshot.stream, after: snapshot.version, lastHash: snapshot.lastHash,
            recordedAt: snapshot.recordedAt)
    }

    var streamId: String { snapshot.stream.id }
}

/// The grouped write: appends to several streams of one kind, each decided from memory, in one statement — one round
/// trip, one commit — with the guards of a single append's write for each of them. Each write is admitted alone: a
/// stale one (another writer moved its stream, its token epoch changed, its recorded time is off the database's clock)
/// writes nothing and the others are written; so does one whose stream row another writer holds (one queued in its
/// transaction after losing a race: the row is skipped, where a single write's `NOWAIT` fails the statement). A write
/// that fails the statement (an event id or a transaction taken since) fails the whole group, and each of its appends
/// then reads and decides again (`AppendGroup`).
///
/// Every lookup is per write, through the primary keys (a lateral lock of each stream row, then the update by its
/// row id), so the generic plan stays on the indexes however the tables grow (`HotStatementPlanTests`). A group never
/// holds two writes to one stream (`AppendGroup` keeps the second for the next group).
extension AppendStatements {
    static func groupWriteQuery(_ writes: [GroupedWrite<Projection>]) -> PostgresQuery {
        var eventWrite: [Int] = [], ordinals: [Int] = [], ids: [UUID] = [], types: [String] = []
        var data: [String] = [], metadata: [String] = [], occurredAt: [String] = []
        var canonicals: [ByteBuffer] = [], hashes: [ByteBuffer] = []
        for (index, write) in writes.enumerated() {
            for (offset, event) in write.events.enumerated() {
                eventWrite.append(index + 1)
                ordinals.append(offset + 1)
                ids.append(event.eventId)
                types.append(event.type)
                data.append(event.data.canonicalJSON)
                metadata.append(event.metadata.canonicalJSON)
            }
            occurredAt += write.sealed.occurredAt
            canonicals += write.sealed.canonicals
            hashes += write.sealed.hashes
        }
        let tolerance = "interval '\(RecentStreams.clockToleranceSeconds) seconds'"
        return """
        WITH w AS (
            SELECT * FROM unnest(\(writes.map(\.streamId))::text[], \(writes.map(\.snapshot.version))::int8[],
                                 \(writes.map(\.snapshot.streamExists))::bool[],
                                 \(NullableArray(writes.map(\.snapshot.tokenEpoch)))::int8[],
                                 \(writes.map { Timestamp($0.snapshot.recordedAt) })::timestamptz[],
                                 \(writes.map { $0.snapshot.version + $0.events.count })::int8[],
                                 \(writes.map { $0.sealed.lastHash ?? ByteBuffer() })::bytea[])
                 WITH ORDINALITY AS w(stream_id, version, stream_exists, token_epoch, recorded_at, new_version, last_hash, n)
            WHERE coalesce(w.token_epoch = (SELECT epoch FROM api_token_epoch), true)
              AND w.recorded_at <= clock_timestamp() AND w.recorded_at > clock_timestamp() - \(unescaped: tolerance)
        ), head AS (
            SELECT w.n, s.row FROM w CROSS JOIN LATERAL (
                SELECT ctid AS row FROM streams
                WHERE kind = \(unescaped: kindLiteral) AND stream_id = w.stream_id AND version = w.version
                FOR UPDATE SKIP LOCKED
            ) s
            WHERE w.stream_exists
        ), moved AS (
            UPDATE streams s SET version = w.new_version, last_hash = w.last_hash
            FROM head h JOIN w USING (n)
            WHERE s.ctid = h.row
            RETURNING h.n
        ), created AS (
            INSERT INTO streams (kind, stream_id, version, last_hash)
            SELECT \(unescaped: kindLiteral), stream_id, new_version, last_hash FROM w WHERE NOT stream_exists
            ON CONFLICT (kind, stream_id) DO NOTHING
            RETURNING stream_id
        ), won AS (
            SELECT n FROM moved UNION ALL SELECT w.n FROM created JOIN w USING (stream_id)
        ), appended AS (
            INSERT INTO events (kind, stream_id, version, event_id, type, data, metadata, occurred_at, recorded_at, canonical, hash)
            SELECT \(unescaped: kindLiteral), w.stream_id, w.version + e.ordinal, e.event_id, e.type, e.data::jsonb,
                   e.metadata::jsonb, NULLIF(e.occurred_at, '')::timestamptz, w.recorded_at, e.canonical, e.hash
            FROM unnest(\(eventWrite)::int8[], \(ordinals)::int8[], \(ids)::uuid[], \(types)::text[], \(data)::text[],
                        \(metadata)::text[], \(occurredAt)::text[], \(canonicals)::bytea[], \(hashes)::bytea[])
                 AS e(n, ordinal, event_id, type, data, metadata, occurred_at, canonical, hash)
            JOIN won USING (n) JOIN w USING (n)
            ORDER BY e.n, e.ordinal
            RETURNING stream_id, event_id, version, position
        )\(Projection.self, groupWrite: writes.map(\.written))
        SELECT w.n, a.event_id, a.version, a.position, \(unescaped: Projection.groupWriteCheck)
        FROM appended a JOIN w USING (stream_id) \(unescaped: Projection.groupWriteJoins)
        ORDER BY w.n, a.version
        """
    }

    enum GroupWriteShape: StatementShape {
        static var name: String { AppendStatementTexts.of(Projection.self).groupWrite.name }
        static var sql: String { AppendStatementTexts.of(Projection.self).groupWrite.sql }
    }

    /// Writes the group; for each of its writes, in order, where its events landed and its stream's new last hash,
    /// or nil when its guards stopped it (nothing of it was written). Throws when the statement failed: then nothing
    /// of the group was written.
    func writeGroup(_ writes: [GroupedWrite<Projection>], on connection: PostgresConnection)
        async throws -> [(events: [AppendedEvent], lastHash: [UInt8])?]
    {
        let rows = try await connection.statement(Self.groupWriteQuery(writes), preparedAs: GroupWriteShape.self, logger: logger)
        var appended = [[AppendedEvent]](repeating: [], count: writes.count)
        for try await row in rows {
            let (n, eventId, version, position, _) = try row.decode((Int, UUID, Int, Int64, Bool).self)
            guard appended.indices.contains(n - 1) else { throw GroupWriteAnsweredUnknownWrite(n: n) }
            appended[n - 1].append(AppendedEvent(eventId: eventId, version: version, position: position))
        }
        return zip(writes, appended).map { write, events in
            guard events.count == write.events.count, let lastHash = write.sealed.lastHash else { return nil }
            return (events, Array(lastHash.readableBytesView))
        }
    }
}

/// The grouped write answered for a write it was not given: PostgreSQL broke the statement's contract (a 500 for
/// the appends of the group, never a trap).
struct GroupWriteAnsweredUnknownWrite: Error, CustomStringConvertible {
    let n: Int
    var description: String { "the grouped append's write answered for write \(n), which it was not given" }
}
