import Logging
import PostgresNIO

/// The live projections' indexes and key constraints, read from the catalog and made again on the rebuild's tables
/// once they are filled — the schema stays the single source of truth, and each index is built once instead of
/// being kept up row by row.
struct ProjectionIndexes: Sendable {
    /// Statements, in the catalog's order, that give `*_rebuild` the live table's indexes and key constraints.
    let statements: [String]
    let logger: Logger

    static let tables = ["orders", "order_transactions"]

    static func read(client: SessionPool, logger: Logger) async throws -> ProjectionIndexes {
        var statements: [String] = []
        for table in tables {
            let rows = try await client.query(
                """
                SELECT pg_get_indexdef(i.indexrelid), pg_get_constraintdef(c.oid)
                FROM pg_index i LEFT JOIN pg_constraint c ON c.conindid = i.indexrelid AND c.conrelid = i.indrelid
                WHERE i.indrelid = \(table)::regclass ORDER BY i.indexrelid
                """, .reads, logger: logger)
            for try await (index, constraint) in rows.decode((String, String?).self) {
                statements.append(try statement(index: index, constraint: constraint, on: table + "_rebuild"))
            }
        }
        return ProjectionIndexes(statements: statements, logger: logger)
    }

    /// A key constraint is added as one (its index comes with it, and the catalog knows it as a key); any other
    /// index is created again without its name, which PostgreSQL then chooses (no migration names a projection index).
    static func statement(index: String, constraint: String?, on table: String) throws -> String {
        if let constraint { return "ALTER TABLE \(table) ADD \(constraint)" }
        // "CREATE [UNIQUE] INDEX name ON [ONLY] schema.table USING …": keep the head and everything from USING.
        guard let on = index.range(of: " ON "), let using = index.range(of: " USING ", range: on.upperBound..<index.endIndex),
              let indexWord = index.range(of: "INDEX ", range: index.startIndex..<on.lowerBound)
        else { throw IndexDefinitionNotUnderstood(definition: index) }
        return String(index[..<indexWord.upperBound]) + "ON \(table)" + String(index[using.lowerBound...])
    }

    struct IndexDefinitionNotUnderstood: Error, CustomStringConvertible {
        let definition: String
        var description: String { "rebuild: cannot recreate the index \(definition)" }
    }

    /// Builds them on `sessions` connections at once, each statement in a transaction of its own, with room to sort
    /// in memory (the tables are new: nobody else waits on them). Key constraints come first and are dealt out to
    /// different sessions: adding one locks its table against the other sessions' index builds until it commits.
    /// PostgreSQL's parallel workers are off: the sessions are the parallelism, and on a 2-core machine two sessions
    /// built the indexes in 430–610 ms against 640–725 ms for one session with workers (BENCHMARKS.md, stop 33).
    func create(on client: SessionPool, sessions: Int) async throws {
        let ordered = statements.filter { $0.hasPrefix("ALTER TABLE") } + statements.filter { !$0.hasPrefix("ALTER TABLE") }
        let count = max(1, min(sessions, ordered.count))
        let shares = (0..<count).map { session in stride(from: session, to: ordered.count, by: count).map { ordered[$0] } }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for share in shares {
                group.addTask {
                    for statement in share {
                        try await client.withTransaction(logger: logger) { connection in
                            try await connection.statement(
                                """
                                SELECT set_config('maintenance_work_mem', '256MB', true),
                                       set_config('max_parallel_maintenance_workers', '0', true)
                                """, logger: logger)
                            try await connection.statement(PostgresQuery(unsafeSQL: statement), logger: logger)
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
    }
}
