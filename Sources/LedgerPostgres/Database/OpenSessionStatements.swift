import Logging
import PostgresNIO

/// The session closed before the statement could be sent: PostgreSQL ended it (a failed commit, a restart, a
/// failover, `pg_terminate_backend`) or the client closed it. Nothing of the statement ran.
public struct SessionClosed: Error, CustomStringConvertible {
    public var description: String { "the database session closed before the statement was sent" }
}

/// Every statement the ledger sends goes through here, never through PostgresNIO's own `query`, `execute`,
/// `copyFrom` or `withTransaction`.
///
/// Why: PostgresNIO 1.33 writes each request into the session's channel without a promise for the write. Once the
/// channel has closed, its pipeline's handlers are gone, the request is dropped, and the statement's caller waits
/// forever (vapor/postgres-nio#487, reverted in #501). Seen in CI: PostgreSQL failed a commit after the statement
/// had completed (a statement timeout that fired as the statement ended), PostgresNIO closed the session, and the
/// reconciliation's next statement on its lease never returned; the test process sat idle with no session left.
///
/// Here a statement is started on the session's event loop, and only while the session is open: on the loop, no
/// close can come between the check and PostgresNIO's write, so the request reaches PostgresNIO's handler, which
/// answers it (with an error, if the session is closing). A closed session is `SessionClosed`. `serve`'s requests
/// already run on their sessions' loop (`EventLoopPools`), so they pay one check; other callers (commands, the
/// background jobs, the tests) hop to the loop for the start of each statement.
extension PostgresConnection {
    /// PostgresNIO's `query`, on an open session.
    @discardableResult
    func statement(
        _ query: PostgresQuery, logger: Logger, file: String = #fileID, line: Int = #line
    ) async throws -> PostgresRowSequence {
        try await whenOpen { try await $0.query(query, logger: logger, file: file, line: line) }
    }

    /// Runs `body` inside a transaction block (`BEGIN` … `COMMIT`), rolled back when `body` throws; `body`'s error is
    /// thrown as it is. A `COMMIT` that fails is `CommitUnconfirmed`: the work is not stored, and a retry is safe.
    func transaction<T>(
        logger: Logger, isolation: isolated (any Actor)? = #isolation,
        _ body: (PostgresConnection) async throws -> sending T
    ) async throws -> sending T {
        try await queryToEnd("BEGIN", logger: logger)
        let value: T
        do {
            value = try await body(self)
        } catch {
            try? await queryToEnd("ROLLBACK", logger: logger)
            throw error
        }
        do {
            try await queryToEnd("COMMIT", logger: logger)
        } catch {
            throw CommitUnconfirmed(underlying: error)
        }
        return value
    }

    /// PostgresNIO's `copyFrom`, on an open session.
    func copy(
        into table: String, columns: [String], logger: Logger,
        _ writeData: (PostgresCopyFromWriter) async throws -> Void
    ) async throws {
        try await whenOpen { connection in
            try await connection.copyFrom(table: table, columns: columns, logger: logger, writeData: writeData)
        }
    }

    /// `start` — a PostgresNIO call that writes its request before its first suspension — on this session's event
    /// loop, once the session is known to be open there.
    func whenOpen<T>(_ start: (PostgresConnection) async throws -> T) async throws -> T {
        if eventLoop.inEventLoop {
            guard !isClosed else { throw SessionClosed() }
            return try await start(self)
        }
        return try await withTaskExecutorPreference(EventLoopExecutor(eventLoop)) {
            guard !self.isClosed else { throw SessionClosed() }
            return try await start(self)
        }
    }
}
