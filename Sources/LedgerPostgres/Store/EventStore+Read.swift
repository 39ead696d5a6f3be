import Foundation
import LedgerCore
import Logging
import PostgresNIO

extension EventStore {
    /// A stream's events in version order, optionally only a prefix of them.
    func read(_ stream: StreamName, upTo limit: StreamLimit? = nil) async throws -> [StoredEvent] {
        let (kind, id) = (stream.kind.name, stream.id)
        let query: PostgresQuery = switch limit {
        case nil:
            "SELECT \(unescaped: Self.columns) FROM events WHERE kind = \(kind) AND stream_id = \(id) ORDER BY version"
        case .version(let version)?:
            """
            SELECT \(unescaped: Self.columns) FROM events
            WHERE kind = \(kind) AND stream_id = \(id) AND version <= \(version) ORDER BY version
            """
        case .recordedAt(let time)?:
            """
            SELECT \(unescaped: Self.columns) FROM events
            WHERE kind = \(kind) AND stream_id = \(id) AND recorded_at <= \(Timestamp(time)) ORDER BY version
            """
        }
        return try await client.query(query, .reads, logger: logger, reading: Self.decode)
    }

    /// A stream's events after `version`, in version order: what was appended since the caller last read.
    func read(_ stream: StreamName, after version: Int) async throws -> [StoredEvent] {
        try await client.query(
            """
            SELECT \(unescaped: Self.columns) FROM events
            WHERE kind = \(stream.kind.name) AND stream_id = \(stream.id) AND version > \(version) ORDER BY version
            """, .reads, logger: logger, reading: Self.decode)
    }

    /// At most `limit` of a stream's events after version `after`, in version order, only those recorded by `asOf`
    /// when given: one page of its history, read on `connection`; and the stream's version in the same snapshot
    /// (nil when the page is empty), which the page's answer is good for as long as it stays.
    func readPage(
        _ stream: StreamName, after version: Int, asOf: Date?, limit: Int, on connection: PostgresConnection
    ) async throws -> (events: [StoredEvent], streamVersion: Int?) {
        let query = Self.pageQuery(stream, after: version, asOf: asOf, limit: limit)
        let rows = try await (asOf == nil
            ? connection.statement(query, preparedAs: PageShape.self, logger: logger)
            : connection.statement(query, preparedAs: PageAsOfShape.self, logger: logger))
        var events: [StoredEvent] = []
        var epoch: Int64?
        var streamVersion: Int?
        for try await row in rows {
            let columns = row.makeRandomAccess()
            events.append(try Self.decode(columns))
            epoch = try columns[Self.columnCount].decode(Int64.self)
            streamVersion = try columns[Self.columnCount + 1].decode(Int.self)
        }
        if confirmsTokens, let epoch { try await TokenConfirmation.confirm(epoch: epoch) }
        return (events, streamVersion)
    }

    /// Whether the event at `position` is here: on a replica, whether it has replayed that append's commit.
    func holds(position: Int64) async throws -> Bool {
        try await client.query("SELECT EXISTS (SELECT 1 FROM events WHERE position = \(position))", .reads, logger: logger) { rows in
            for try await held in rows.decode(Bool.self) { return held }
            return false
        }
    }

    /// The page's statement. The token epoch rides along (schema/009): a page that has rows confirms the request's
    /// cached token. So does the stream's version, read in the page's snapshot.
    static func pageQuery(_ stream: StreamName, after version: Int, asOf: Date?, limit: Int) -> PostgresQuery {
        let (kind, id) = (stream.kind.name, stream.id)
        let query: PostgresQuery = if let asOf {
            """
            SELECT \(unescaped: columns), (SELECT epoch FROM api_token_epoch),
                   (SELECT s.version FROM streams s WHERE s.kind = \(kind) AND s.stream_id = \(id)) AS stream_version
            FROM events
            WHERE kind = \(kind) AND stream_id = \(id) AND version > \(version) AND recorded_at <= \(Timestamp(asOf))
            ORDER BY version LIMIT \(limit)
            """
        } else {
            """
            SELECT \(unescaped: columns), (SELECT epoch FROM api_token_epoch),
                   (SELECT s.version FROM streams s WHERE s.kind = \(kind) AND s.stream_id = \(id)) AS stream_version
            FROM events
            WHERE kind = \(kind) AND stream_id = \(id) AND version > \(version) ORDER BY version LIMIT \(limit)
            """
        }
        return query
    }

    enum PageShape: StatementShape {
        static let name = "ledger.history-page"
        static let sql = pageQuery(.order(""), after: 0, asOf: nil, limit: 1).sql
    }

    enum PageAsOfShape: StatementShape {
        static let name = "ledger.history-page-as-of"
        static let sql = pageQuery(.order(""), after: 0, asOf: Date(timeIntervalSince1970: 0), limit: 1).sql
    }

    /// Calls `body` with each of a stream's events up to and including version `through` (only those recorded by
    /// `asOf` when given), in version order, one row at a time: memory stays flat however many there are.
    func forEach(
        _ stream: StreamName, through version: Int, asOf: Date?, on connection: PostgresConnection,
        _ body: (StoredEvent) throws -> Void
    ) async throws {
        let (kind, id) = (stream.kind.name, stream.id)
        let query: PostgresQuery = if let asOf {
            """
            SELECT \(unescaped: Self.columns) FROM events
            WHERE kind = \(kind) AND stream_id = \(id) AND version <= \(version) AND recorded_at <= \(Timestamp(asOf))
            ORDER BY version
            """
        } else {
            """
            SELECT \(unescaped: Self.columns) FROM events
            WHERE kind = \(kind) AND stream_id = \(id) AND version <= \(version) ORDER BY version
            """
        }
        for try await row in try await connection.statement(query, logger: logger) {
            try body(try Self.decode(row))
        }
    }

    /// Whether the stream has any event at all.
    func hasEvents(_ stream: StreamName, on connection: PostgresConnection) async throws -> Bool {
        let rows = try await connection.statement(
            "SELECT EXISTS (SELECT 1 FROM events WHERE kind = \(stream.kind.name) AND stream_id = \(stream.id))",
            logger: logger)
        for try await exists in rows.decode(Bool.self) { return exists }
        return false
    }

    /// One page of the global feed, every kind of stream: the events after the one at position `after` (nil: from the start).
    ///
    /// The feed never skips an event, however transactions interleave. Positions are taken when a transaction
    /// inserts, but transactions commit in another order, so a reader paging by position alone could pass a
    /// position whose transaction has not committed yet and never come back for it. Instead every row records
    /// its writer's transaction id, and the feed:
    /// - is ordered by (transaction id, position), and
    /// - only returns rows whose transaction id is below the oldest append still running (`feedHorizon`).
    /// Every append below that horizon has finished, and every append that has not finished, or has not started, has
    /// or gets an id at or above it; so no row can later appear before a row already read. Writers take no global
    /// lock; the price is that a long-running append holds the feed back until it ends — but only an append: another
    /// open transaction (in another database, an import, a session idle in transaction) is passed over.
    /// The cursor stays a plain position: the event at that position gives the (transaction id, position) to resume after.
    func readAll(after position: Int64?, limit: Int) async throws -> [StoredEvent] {
        var cursor: FeedCursor?
        if let position { cursor = FeedCursor(transactionId: try await transactionId(ofPosition: position), position: position) }
        return try await readFeed(after: cursor, limit: limit).map(\.event)
    }

    /// The same page after a cursor its reader kept (a feed consumer's), each event with its place in the feed. (The
    /// text of the transaction id is named apart: named `transaction_xid`, ORDER BY would sort by it, as text.)
    /// `since` (SQL time): only the events recorded from then on, as a consumer that passes over the others reads.
    func readFeed(after cursor: FeedCursor?, limit: Int, recordedFrom since: String? = nil) async throws -> [(event: StoredEvent, cursor: FeedCursor)] {
        try await client.query(
            """
            SELECT \(unescaped: Self.columns), transaction_xid::text AS cursor_xid FROM events
            WHERE (transaction_xid, position) > (\(cursor?.transactionId ?? "0")::xid8, \(cursor?.position ?? 0))
              AND transaction_xid < \(unescaped: Self.feedHorizon)\(unescaped: since.map { " AND recorded_at >= (\($0))" } ?? "")
            ORDER BY transaction_xid, position LIMIT \(limit)
            """, .reads, logger: logger
        ) { rows in
            var page: [(event: StoredEvent, cursor: FeedCursor)] = []
            for try await row in rows {
                let columns = row.makeRandomAccess()
                let event = try Self.decode(columns)
                page.append((event, FeedCursor(transactionId: try columns[Self.columnCount].decode(String.self), position: event.position)))
            }
            return page
        }
    }

    /// The writing transaction of the event at `position` (as text): the first half of a feed cursor.
    func transactionId(ofPosition position: Int64) async throws -> String {
        let logger = self.logger
        return try await client.withConnection(within: Deadline.remaining, .reads) { connection in
            try await Self.transactionId(ofPosition: position, on: connection, logger: logger)
        }
    }

    static func transactionId(ofPosition position: Int64, on connection: PostgresConnection, logger: Logger) async throws -> String {
        let rows = try await connection.statement("SELECT transaction_xid::text FROM events WHERE position = \(position)", logger: logger)
        for try await xid in rows.decode(String.self) { return xid }
        throw EventStoreError.unknownPosition(position)
    }

    /// The feed's horizon, as SQL: the oldest transaction of the reading statement's snapshot that may still add an
    /// event it does not see (`schema/020_feed_horizon.sql`), computed once per statement (a scalar subquery).
    static let feedHorizon = "(SELECT feed_horizon(pg_current_snapshot()))"

    /// The columns every read selects, in the order `decode` expects.
    static let columns = "position, kind, stream_id, version, event_id, type, data::text, metadata::text, occurred_at, recorded_at"

    static func decode(_ rows: PostgresRowSequence) async throws -> [StoredEvent] {
        var events: [StoredEvent] = []
        for try await row in rows {
            events.append(try decode(row))
        }
        return events
    }

    static let columnCount = 10

    static func decode(_ row: PostgresRow) throws -> StoredEvent {
        try decode(row.makeRandomAccess())
    }

    /// The event in the first `columnCount` columns (a statement may add its own after them).
    static func decode(_ columns: PostgresRandomAccessRow) throws -> StoredEvent {
        let position = try columns[0].decode(Int64.self)
        let stream = StreamName(StreamKind(try columns[1].decode(String.self)), try columns[2].decode(String.self))
        let version = try columns[3].decode(Int.self), eventId = try columns[4].decode(UUID.self)
        let type = try columns[5].decode(String.self), data = try columns[6].decode(String.self)
        let metadata = try columns[7].decode(String.self), occurredAt = try columns[8].decode(Date?.self)
        let recordedAt = try columns[9].decode(Date.self)
        return StoredEvent(
            position: position, stream: stream, version: version, eventId: eventId, type: type,
            data: try JSONValue(parsing: Array(data.utf8)), metadata: try JSONValue(parsing: Array(metadata.utf8)),
            occurredAt: occurredAt, recordedAt: recordedAt)
    }
}
