import Foundation
import PostgresNIO
@testable import LedgerPostgres
import LedgerTestSupport
import Synchronization
import Testing

/// A statement sent on a session that closed after its lease began is refused (`SessionClosed`), not lost: PostgresNIO
/// 1.33 dropped a request written to a closed channel, and its caller waited forever. Seen in CI, where PostgreSQL
/// failed a commit after the statement had completed and the reconciliation's next statement never returned.
@Suite("Database: a statement on a session that has closed is refused, never lost")
struct ClosedSessionTests {
    @Test func aStatementOnASessionPostgreSQLEndedBetweenStatementsIsRefused() async throws {
        try await TestDatabase.withClient(poolSize: 2) { pool in
            let outcome = try await pool.withConnection(.reads) { connection in
                try await Self.end(connection, from: pool)
                return await Self.outcome { _ = try await connection.statement("SELECT 1", logger: Self.logger).collect() }
            }
            #expect(outcome == "refused")
            #expect(DatabaseErrors.isUnavailable(SessionClosed()), "answered 503, worth a retry")
        }
    }

    @Test func aTransactionWhoseSessionEndedMidwayFailsAndLeavesNothing() async throws {
        try await TestDatabase.withClient(poolSize: 2) { pool in
            let outcome = await Self.outcome {
                try await pool.withTransaction(logger: Self.logger) { connection in
                    try await connection.queryToEnd("CREATE TABLE midway (n int)", logger: Self.logger)
                    try await Self.end(connection, from: pool)
                    try await connection.queryToEnd("INSERT INTO midway VALUES (1)", logger: Self.logger)
                }
            }
            #expect(outcome == "refused")
            let tables = try await firstText("SELECT count(*)::text FROM pg_class WHERE relname = 'midway'", on: pool)
            #expect(tables == "0", "rolled back with its session")
        }
    }

    /// Ends `connection`'s session from another of `pool`'s sessions, and returns once its channel has closed.
    static func end(_ connection: PostgresConnection, from pool: SessionPool) async throws {
        let pid = try await connection.statement("SELECT pg_backend_pid()", logger: logger).collect()[0].decode(Int32.self)
        try await pool.queryToEnd("SELECT pg_terminate_backend(\(pid))", logger: logger)
        try await connection.closeFuture.get()
    }

    /// "refused" when `work` throws `SessionClosed`, "hung" when it has not returned within 5 minutes (a request lost,
    /// whose caller would wait forever), else what it did. Refused, it returns at once; but 30 s once ran out in CI,
    /// while the whole suite's start held the machine (tests of seconds took three minutes).
    static func outcome(_ work: @escaping @Sendable () async throws -> Void) async -> String {
        let answer = Mutex<CheckedContinuation<String, Never>?>(nil)
        let give = { @Sendable (outcome: String) in answer.withLock { $0.take() }?.resume(returning: outcome) }
        let timer = Task {
            try? await Task.sleep(for: .seconds(300))
            give("hung")
        }
        defer { timer.cancel() }
        return await withCheckedContinuation { continuation in
            answer.withLock { $0 = continuation }
            Task {
                do { try await work(); give("ran") } catch is SessionClosed { give("refused") } catch { give("\(error)") }
            }
        }
    }

    static let logger = Logger(label: "test")
}
