import Foundation
import LedgerCore
import Logging
import PostgresNIO

/// Reads sealed events for auditing, page by page, so memory stays flat however long the log is.
struct AuditLog: Sendable {
    let client: SessionPool
    let logger: Logger

    init(client: SessionPool, logger: Logger = Logger(label: "ledger.audit")) {
        self.client = client
        self.logger = logger
    }

    /// Which events a pass over the feed reads.
    enum Extent: Sendable {
        /// Every event committed when the pass starts, read in one snapshot (REPEATABLE READ): for `verify` and
        /// `export`, which must see everything once.
        case snapshot
        /// Only events below the feed's horizon (the oldest open append), as the feed serves them: for sealing, which continues
        /// later from where it stopped and so must never pass an event that could still be preceded by another.
        case stable
    }

    /// Every event in feed order (transaction id, then position), starting after the event at `position` (nil:
    /// from the start). `body` returns false to stop.
    func forEachInFeedOrder(
        _ extent: Extent = .snapshot, after position: Int64? = nil, pageSize: Int = 5_000,
        _ body: (AuditedEvent) async throws -> Bool
    ) async throws {
        try await client.withConnection { connection in
            try await forEachInFeedOrder(extent, after: position, pageSize: pageSize, on: connection, body)
        }
    }

    /// The same, read on `connection`: the sealer reads on the session that holds its turn, and so takes one session
    /// of its pool, not two. `nonisolated(nonsending)`: it runs where its caller runs, so the overload above can hand
    /// it `body`, which is not `Sendable`.
    nonisolated(nonsending) func forEachInFeedOrder(
        _ extent: Extent, after position: Int64?, pageSize: Int = 5_000, on connection: PostgresConnection,
        _ body: (AuditedEvent) async throws -> Bool
    ) async throws {
        var cursor: (xid: String, position: Int64)?
        if let position {
            cursor = (try await EventStore.transactionId(ofPosition: position, on: connection, logger: logger), position)
        }
        let horizon = switch extent {
        case .stable: EventStore.feedHorizon
        case .snapshot: "'18446744073709551615'::xid8"  // the largest xid8: no limit
        }
        if case .snapshot = extent {
            try await connection.statement("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", logger: logger)
        }
        do {
            pages: while true {
                let rows = try await connection.statement(
                    """
                    SELECT \(unescaped: Self.columns), e.transaction_xid::text
                    FROM events e
                    LEFT JOIN events p ON p.kind = e.kind AND p.stream_id = e.stream_id AND p.version = e.version - 1
                    WHERE (e.transaction_xid, e.position) > (\(cursor?.xid ?? "0")::xid8, \(cursor?.position ?? 0))
                      AND e.transaction_xid < \(unescaped: horizon)
                    ORDER BY e.transaction_xid, e.position
                    LIMIT \(pageSize)
                    """, logger: logger)
                var count = 0
                for try await row in rows {
                    count += 1
                    let event = try Self.decode(row)
                    cursor = (try row.makeRandomAccess()[Self.columnCount].decode(String.self), event.event.position)
                    guard try await body(event) else { break pages }
                }
                if count < pageSize { break pages }
            }
        } catch {
            if case .snapshot = extent { _ = try? await connection.statement("ROLLBACK", logger: logger) }
            throw error
        }
        if case .snapshot = extent { try await connection.statement("ROLLBACK", logger: logger) }
    }

    /// One stream's events in version order.
    func forEach(of stream: StreamName, _ body: (AuditedEvent) async throws -> Bool) async throws {
        let rows = try await client.query(
            """
            SELECT \(unescaped: Self.columns)
            FROM events e LEFT JOIN events p ON p.kind = e.kind AND p.stream_id = e.stream_id AND p.version = e.version - 1
            WHERE e.kind = \(stream.kind.name) AND e.stream_id = \(stream.id) ORDER BY e.version
            """, .reads, logger: logger)
        for try await row in rows {
            guard try await body(try Self.decode(row)) else { return }
        }
    }

    /// One stream's hash chain, link by link: each event's hash, what is wrong with its seal, and whether the chain
    /// holds from the first event up to it.
    /// Within the request's deadline (an API read).
    func chain(of stream: StreamName) async throws -> [ChainLink] {
        try await client.query(
            """
            SELECT \(unescaped: Self.columns)
            FROM events e LEFT JOIN events p ON p.kind = e.kind AND p.stream_id = e.stream_id AND p.version = e.version - 1
            WHERE e.kind = \(stream.kind.name) AND e.stream_id = \(stream.id) ORDER BY e.version
            """, .reads, logger: logger
        ) { rows in
            var links: [ChainLink] = []
            var intact = true
            for try await row in rows {
                let audited = try Self.decode(row)
                let problem = audited.sealProblem
                intact = intact && problem == nil
                links.append(ChainLink(
                    version: audited.event.version, position: audited.event.position, hash: audited.hash?.hex,
                    problem: problem, verifiedUpToHere: intact))
            }
            return links
        }
    }

    static let columns = """
        e.position, e.kind, e.stream_id, e.version, e.event_id, e.type, e.data::text, e.metadata::text, e.occurred_at,
        e.recorded_at, e.canonical, e.hash, p.hash
        """
    static let columnCount = 13

    static func decode(_ row: PostgresRow) throws -> AuditedEvent {
        let columns = row.makeRandomAccess()
        let bytes = { (index: Int) throws -> [UInt8]? in
            try columns[index].decode(ByteBuffer?.self).map { Array($0.readableBytesView) }
        }
        return AuditedEvent(
            event: StoredEvent(
                position: try columns[0].decode(Int64.self),
                stream: StreamName(StreamKind(try columns[1].decode(String.self)), try columns[2].decode(String.self)),
                version: try columns[3].decode(Int.self), eventId: try columns[4].decode(UUID.self),
                type: try columns[5].decode(String.self),
                data: try JSONValue(parsing: Array(try columns[6].decode(String.self).utf8)),
                metadata: try JSONValue(parsing: Array(try columns[7].decode(String.self).utf8)),
                occurredAt: try columns[8].decode(Date?.self), recordedAt: try columns[9].decode(Date.self)),
            canonical: try bytes(10), hash: try bytes(11), previousHash: try bytes(12))
    }
}
