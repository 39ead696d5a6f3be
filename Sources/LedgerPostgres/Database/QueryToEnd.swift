import Logging
import PostgresNIO

extension PostgresConnection {
    /// Runs a statement whose rows are not wanted, reading them to the end. PostgresNIO hands back a statement's rows
    /// as soon as their description arrives, so an error raised while the statement runs — a lock wait ended by
    /// `lock_timeout`, an exception from a function — reaches only a caller that reads them. Dropped unread, a
    /// `SELECT pg_advisory_lock(…)` that timed out looks like a lock taken.
    func queryToEnd(_ query: PostgresQuery, logger: Logger) async throws {
        for try await _ in try await statement(query, logger: logger) {}
    }
}

extension SessionPool {
    /// `PostgresConnection.queryToEnd`, on a connection of the pool.
    func queryToEnd(_ query: PostgresQuery, logger: Logger) async throws {
        for try await _ in try await self.query(query, logger: logger) {}
    }
}
