import Foundation
import LedgerCore
import Logging
import PostgresNIO
import Synchronization

/// Everything an append decides on, read by one statement (one snapshot): the stream's head, the database clock,
/// which of the new event ids are already stored, the token epoch, and what the stream's kind reads beside them
/// (`StreamProjection.Read`: an order's row and the transaction bindings its new events name).
struct AppendSnapshot<Read: Sendable>: Sendable {
    let stream: StreamName
    /// The stream's version (0: no stream yet) and whether its row exists.
    let version: Int
    let streamExists: Bool
    /// The hash of the stream's last event, which the new events chain onto.
    let lastHash: [UInt8]?
    /// The database's clock at the read: every event of the batch is recorded at this time. Times within one stream
    /// never go backwards: a later writer reads after an earlier one committed, or loses the version check.
    let recordedAt: Date
    /// The new event ids already stored, with where they landed and whether they match the new events exactly.
    let stored: [StoredEventId]
    /// What the stream's projection read (`StreamProjection.Read`).
    let read: Read
    /// The token epoch (schema/009), which confirms a request's cached token before anything is written: the one
    /// read, or, from memory, the one the request's cached token was read under (nil: no token to confirm); a
    /// snapshot from memory is written by the grouped write, which checks it and the recorded time itself
    /// (AppendStatements+Group.swift).
    let tokenEpoch: Int64?
}

extension AppendSnapshot {
    /// The snapshot an append of `events` decides on without reading (`RecentStreams`): the stream this node's last
    /// write left, or, for a batch that starts its stream, no stream yet. Nil when neither applies, or the node has
    /// not read the database's clock yet.
    static func remembered<Projection: StreamProjection>(
        _ stream: StreamName, of projection: Projection.Type, events: [NewEvent], tokenEpoch: Int64?,
        in memory: RecentStreams
    ) -> AppendSnapshot? where Projection.Read == Read {
        guard let now = memory.databaseClock() else { return nil }
        if let remembered = memory.stream(stream), let written = remembered.written as? Projection.Written {
            return AppendSnapshot(
                stream: stream, version: remembered.version, streamExists: true, lastHash: remembered.lastHash,
                recordedAt: max(now, remembered.recordedAt), stored: [],
                read: Projection.read(after: written, stream: stream.id), tokenEpoch: tokenEpoch)
        }
        guard let first = events.first, Projection.startsStream(firstEventType: first.type) else { return nil }
        return AppendSnapshot(
            stream: stream, version: 0, streamExists: false, lastHash: nil, recordedAt: now, stored: [],
            read: Projection.noStream, tokenEpoch: tokenEpoch)
    }
}

struct StoredEventId {
    let event: AppendedEvent
    /// The stream it is stored in.
    let stream: StreamName
    let sameContent: Bool
}

/// The two statements of an append, on one screen: one read, one write. Between them the domain decides in Swift.
/// No transaction is needed: the write is one statement, and every part of it is gated on the stream's version still
/// being the one read — a writer that lost the race writes nothing, takes no positions, and reads again. What the
/// stream's kind reads and writes beside its events is its `Projection`'s.
struct AppendStatements<Projection: StreamProjection> {
    let logger: Logger

    /// The kind, as a literal of the statements' text: one prepared statement per kind, planned for its own rows.
    static var kindLiteral: String { "'\(Projection.kind.name)'" }

    static func readQuery(_ stream: String, events: [NewEvent], claims: [String]) -> PostgresQuery {
        """
        SELECT clock_timestamp(), s.version, s.last_hash,
               stored.ids, stored.kinds, stored.streams, stored.versions, stored.positions, stored.same,
               (SELECT epoch FROM api_token_epoch)\(unescaped: Projection.readColumns.isEmpty ? "" : ", " + Projection.readColumns)
        FROM (VALUES (\(stream))) AS wanted(stream_id)
        LEFT JOIN streams s ON s.kind = \(unescaped: kindLiteral) AND s.stream_id = wanted.stream_id
        CROSS JOIN LATERAL (
            SELECT array_agg(e.event_id) AS ids, array_agg(e.kind) AS kinds, array_agg(e.stream_id) AS streams,
                   array_agg(e.version) AS versions, array_agg(e.position) AS positions,
                   array_agg(e.kind = \(unescaped: kindLiteral) AND e.stream_id = \(stream) AND e.type = n.type
                             AND e.data = n.data::jsonb) AS same
            FROM unnest(\(events.map(\.eventId))::uuid[], \(events.map(\.type))::text[],
                        \(events.map(\.data.canonicalJSON))::text[]) AS n(event_id, type, data)
            JOIN events e USING (event_id)
        ) stored
        \(Projection.self, readJoins: claims)
        """
    }

    enum ReadShape: StatementShape {
        static var name: String { AppendStatementTexts.of(Projection.self).read.name }
        static var sql: String { AppendStatementTexts.of(Projection.self).read.sql }
    }

    func read(_ stream: StreamName, events: [NewEvent], claims: [String], on connection: PostgresConnection)
        async throws -> AppendSnapshot<Projection.Read>
    {
        let rows = try await connection.statement(
            Self.readQuery(stream.id, events: events, claims: claims), preparedAs: ReadShape.self, logger: logger)
        for try await row in rows {
            let columns = row.makeRandomAccess()
            let version = try columns[1].decode(Int?.self)
            let ids = try columns[3].decode([UUID]?.self) ?? []
            let kinds = try columns[4].decode([String]?.self) ?? []
            let streams = try columns[5].decode([String]?.self) ?? []
            let versions = try columns[6].decode([Int]?.self) ?? []
            let positions = try columns[7].decode([Int64]?.self) ?? []
            let same = try columns[8].decode([Bool]?.self) ?? []
            let stored = ids.indices.map { index in
                StoredEventId(
                    event: AppendedEvent(eventId: ids[index], version: versions[index], position: positions[index]),
                    stream: StreamName(StreamKind(kinds[index]), streams[index]), sameContent: same[index])
            }
            return AppendSnapshot(
                stream: stream, version: version ?? 0, streamExists: version != nil,
                lastHash: try columns[2].decode(ByteBuffer?.self).map { Array($0.readableBytesView) },
                recordedAt: try columns[0].decode(Date.self), stored: stored,
                read: try Projection.decodeRead(columns, from: 10, stream: stream.id),
                tokenEpoch: try columns[9].decode(Int64.self))
        }
        throw AppendReadReturnedNothing(stream: stream)
    }

    /// The write of `events` sealed as `sealed`, after the read that gave `snapshot`.
    static func writeQuery(
        _ events: [NewEvent], sealed: SealedEvents, after snapshot: AppendSnapshot<Projection.Read>,
        projecting written: Projection.Written?, queued: Bool
    ) -> PostgresQuery {
        let newVersion = snapshot.version + events.count
        let recordedAt = Timestamp(snapshot.recordedAt)
        let streamId = snapshot.stream.id
        return """
        WITH head AS (
            SELECT 1 FROM streams
            WHERE kind = \(unescaped: kindLiteral) AND stream_id = \(streamId) AND version = \(snapshot.version)
                  AND \(snapshot.streamExists)
            FOR UPDATE \(unescaped: queued ? "" : "NOWAIT")
        ), moved AS (
            UPDATE streams SET version = \(newVersion), last_hash = \(sealed.lastHash)::bytea
            WHERE kind = \(unescaped: kindLiteral) AND stream_id = \(streamId) AND EXISTS (SELECT 1 FROM head)
            RETURNING 1
        ), created AS (
            INSERT INTO streams (kind, stream_id, version, last_hash)
            SELECT \(unescaped: kindLiteral), \(streamId), \(newVersion), \(sealed.lastHash)::bytea
            WHERE NOT \(snapshot.streamExists)
            ON CONFLICT (kind, stream_id) DO NOTHING
            RETURNING 1
        ), won AS (
            SELECT 1 FROM moved UNION ALL SELECT 1 FROM created
        ), appended AS (
            INSERT INTO events (kind, stream_id, version, event_id, type, data, metadata, occurred_at, recorded_at, canonical, hash)
            SELECT \(unescaped: kindLiteral), \(streamId), \(snapshot.version) + n.ordinal, n.event_id, n.type,
                   n.data::jsonb, n.metadata::jsonb, NULLIF(n.occurred_at, '')::timestamptz, \(recordedAt),
                   n.canonical, n.hash
            FROM unnest(\(events.map(\.eventId))::uuid[], \(events.map(\.type))::text[],
                        \(events.map(\.data.canonicalJSON))::text[], \(events.map(\.metadata.canonicalJSON))::text[],
                        \(sealed.occurredAt)::text[], \(sealed.canonicals)::bytea[], \(sealed.hashes)::bytea[])
                 WITH ORDINALITY AS n(event_id, type, data, metadata, occurred_at, canonical, hash, ordinal)
            WHERE EXISTS (SELECT 1 FROM won)
            ORDER BY n.ordinal
            RETURNING event_id, version, position
        )\(Projection.self, write: written, stream: streamId)
        SELECT a.event_id, a.version, a.position, \(Projection.self, writeCheck: written)
        FROM appended a
        ORDER BY a.version
        """
    }

    enum WriteShape: StatementShape {
        static var name: String { AppendStatementTexts.of(Projection.self).write.name }
        static var sql: String { AppendStatementTexts.of(Projection.self).write.sql }
    }

    enum QueuedWriteShape: StatementShape {
        static var name: String { AppendStatementTexts.of(Projection.self).queuedWrite.name }
        static var sql: String { AppendStatementTexts.of(Projection.self).queuedWrite.sql }
    }

    /// Writes the events after `snapshot.version`, chained onto its last hash, with what the kind projects
    /// (`written`); returns where they landed and the stream's new last hash. Returns nil when another writer moved
    /// the stream since the read (nothing was written). A check of the projection that fails (a transaction another
    /// order claimed since the read, schema/008) aborts the statement: the caller reads again either way.
    ///
    /// Unqueued, the stream row is locked NOWAIT: a row another writer holds (one queued in its transaction) fails
    /// the statement at once (55P03) instead of waiting. Outside a transaction a statement that waits past the
    /// request's deadline would still commit when the lock is freed, after the caller was answered 503; queued, the
    /// write waits its turn inside a transaction, which an abandoned connection never commits.
    func write(
        _ events: [NewEvent], after snapshot: AppendSnapshot<Projection.Read>, projecting written: Projection.Written?,
        queued: Bool, on connection: PostgresConnection
    ) async throws -> (events: [AppendedEvent], lastHash: [UInt8])? {
        let sealed = SealedEvents(events, stream: snapshot.stream, after: snapshot.version, lastHash: snapshot.lastHash,
                                  recordedAt: snapshot.recordedAt)
        let query = Self.writeQuery(events, sealed: sealed, after: snapshot, projecting: written, queued: queued)
        let rows = try await (queued
            ? connection.statement(query, preparedAs: QueuedWriteShape.self, logger: logger)
            : connection.statement(query, preparedAs: WriteShape.self, logger: logger))
        var appended: [AppendedEvent] = []
        for try await row in rows {
            let (eventId, version, position, _) = try row.decode((UUID, Int, Int64, Bool).self)
            appended.append(AppendedEvent(eventId: eventId, version: version, position: position))
        }
        guard !appended.isEmpty, let lastHash = sealed.lastHash else { return nil }
        return (appended, Array(lastHash.readableBytesView))
    }

    /// Takes the stream's append lock for the rest of the transaction: after losing a race, appends to one stream
    /// queue here instead of racing again (64 writers on one order would otherwise mostly lose every round).
    func queue(for stream: StreamName, on connection: PostgresConnection) async throws {
        try await connection.queryToEnd(
            "SELECT pg_advisory_xact_lock(\(AppendLock.space), hashtext(\(stream.lockKey)))", logger: logger)
    }
}

/// The first key of the two-key advisory locks appends queue on ("OLap"); the sealer and the migrator use one-key
/// locks, a separate key space.
enum AppendLock {
    static let space: Int32 = 0x4F4C_6170
}

extension StreamName {
    /// What its append lock hashes: an order's id alone (as before kinds, so that a node of the last build and one of
    /// this build queue on the same lock), another kind's name and id.
    var lockKey: String { kind == .order ? id : kind.name + ":" + id }
}

/// An append's statements' texts and prepared names, made once per kind (`ReadShape`, `WriteShape`, …: PostgresNIO
/// asks for both on every call).
struct AppendStatementTexts: Sendable {
    struct Text: Sendable {
        let name: String
        let sql: String
    }
    let read: Text
    let write: Text
    let queuedWrite: Text
    let groupWrite: Text

    private static let made = Mutex<[ObjectIdentifier: AppendStatementTexts]>([:])

    static func of<Projection: StreamProjection>(_ projection: Projection.Type) -> AppendStatementTexts {
        if let texts = made.withLock({ $0[ObjectIdentifier(projection)] }) { return texts }
        typealias Statements = AppendStatements<Projection>
        let kind = Projection.kind.name
        // Orders' names are the ones every build before kinds prepared.
        let suffix = Projection.kind == .order ? "" : "." + kind
        let empty = AppendSnapshot(
            stream: StreamName(Projection.kind, ""), version: 0, streamExists: false, lastHash: nil,
            recordedAt: Date(timeIntervalSince1970: 0), stored: [], read: Projection.noStream, tokenEpoch: nil)
        let texts = AppendStatementTexts(
            read: Text(name: "ledger.append-read" + suffix, sql: Statements.readQuery("", events: [], claims: []).sql),
            write: Text(
                name: "ledger.append-write" + suffix,
                sql: Statements.writeQuery([], sealed: SealedEvents(), after: empty, projecting: nil, queued: false).sql),
            queuedWrite: Text(
                name: "ledger.append-write-queued" + suffix,
                sql: Statements.writeQuery([], sealed: SealedEvents(), after: empty, projecting: nil, queued: true).sql),
            groupWrite: Text(name: "ledger.append-write-group" + suffix, sql: Statements.groupWriteQuery([]).sql))
        made.withLock { $0[ObjectIdentifier(projection)] = texts }
        return texts
    }
}

extension PostgresQuery.StringInterpolation {
    /// A projection's pieces of the append's statements (`StreamProjection`).
    mutating func appendInterpolation<Projection: StreamProjection>(_ projection: Projection.Type, readJoins claims: [String]) {
        Projection.readJoins(claims: claims, into: &self)
    }

    mutating func appendInterpolation<Projection: StreamProjection>(
        _ projection: Projection.Type, write written: Projection.Written?, stream id: String
    ) {
        Projection.write(written, stream: id, into: &self)
    }

    mutating func appendInterpolation<Projection: StreamProjection>(
        _ projection: Projection.Type, writeCheck written: Projection.Written?
    ) {
        Projection.writeCheck(written, into: &self)
    }

    mutating func appendInterpolation<Projection: StreamProjection>(_ projection: Projection.Type, groupWrite written: [Projection.Written]) {
        Projection.groupWrite(written, into: &self)
    }
}

/// The events' canonical bytes and hashes, each chained onto the one before, the first onto the stream's last hash.
struct SealedEvents {
    var canonicals: [ByteBuffer] = []
    var hashes: [ByteBuffer] = []
    var occurredAt: [String] = []
    var lastHash: ByteBuffer? { hashes.last }

    /// No events: for the statement's text (`WriteShape`).
    init() {}

    /// `events` as the stream's events after `version`, chained onto `lastHash` (nil: the stream's first), all
    /// recorded at `recordedAt`.
    init(_ events: [NewEvent], stream: StreamName, after version: Int, lastHash: [UInt8]?, recordedAt: Date) {
        occurredAt = events.map { $0.occurredAt.map(RFC3339.format) ?? "" }
        var previous = lastHash
        for (offset, event) in events.enumerated() {
            let canonical = EventSeal.canonicalBytes(
                stream: stream, version: version + offset + 1, eventId: event.eventId,
                type: event.type, data: event.data, metadata: event.metadata, occurredAt: event.occurredAt,
                recordedAt: recordedAt)
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
    let stream: StreamName
    var description: String { "reading the stream \(stream) returned no row" }
}
