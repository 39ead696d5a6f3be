import Logging
import PostgresNIO

/// How the `serve` nodes of one database say which schema they were built for: every session of a node's pool
/// carries `application_name = "ledger serve schema <its newest migration>"`, and `ledger migrate` will not apply a
/// newer migration while a node of an older schema is connected — that node's SQL was written for the schema it knew.
/// (Nodes built before this name was set cannot be seen; they are older than every migration after 011.)
enum NodeSchema {
    static let prefix = "ledger serve schema "

    /// This binary's: its newest migration's name (well under PostgreSQL's 63-byte limit on `application_name`).
    static var applicationName: String { prefix + (Migration.all.last?.name ?? "none") }

    /// The schemas of the `serve` nodes connected to the current database that are older than `newest`, oldest
    /// first. Migration names sort in the order they apply (their numbers are zero-padded).
    static func olderNodes(than newest: String, on connection: PostgresConnection, logger: Logger) async throws -> [String] {
        let start = prefix.count + 1
        var schemas: [String] = []
        for try await schema in try await connection.statement(
            """
            SELECT DISTINCT substr(application_name, \(start)::int) FROM pg_stat_activity
            WHERE datname = current_database() AND starts_with(application_name, \(prefix))
              AND substr(application_name, \(start)::int) < \(newest)
            ORDER BY 1
            """, logger: logger
        ).decode(String.self) {
            schemas.append(schema)
        }
        return schemas
    }
}
