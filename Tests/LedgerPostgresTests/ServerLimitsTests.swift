import Foundation
@testable import LedgerPostgres
import LedgerTestSupport
import PostgresNIO
import Testing

/// The service's sessions carry PostgreSQL's own limits, so work the service abandoned at its deadline is ended by
/// PostgreSQL too; the operator's sessions carry none.
@Suite("Database: PostgreSQL's limits on the service's sessions")
struct ServerLimitsTests {
    @Test func everyServiceSessionShowsTheConfiguredLimits() async throws {
        let limits = ServerLimits(statement: .milliseconds(1500), lock: .milliseconds(700), idleInTransaction: .milliseconds(2500))
        let configured = try await TestDatabase.withOwnerAndService(limits: limits) { _, service in try await Self.shown(service) }
        #expect(configured == ["1500ms", "700ms", "2500ms"])
        let defaults = try await TestDatabase.withOwnerAndService(limits: .service) { _, service in try await Self.shown(service) }
        #expect(defaults == ["10s", "5s", "15s"])
    }

    @Test func theDefaultsStayAboveTheRequestDeadline() {
        let deadline = Duration.seconds(5)  // serve --database-deadline's default
        #expect(ServerLimits.service.statement > deadline)
        #expect(ServerLimits.service.lock >= deadline)
        #expect(ServerLimits.service.idleInTransaction > deadline)
    }

    @Test func aStatementPastTheStatementTimeoutIsCancelledByPostgreSQL() async throws {
        // 1 s, not less: on a machine busy with the whole suite even the warm-up `SELECT 1` once took past 200 ms.
        let limits = ServerLimits(statement: .seconds(1), lock: .seconds(30), idleInTransaction: .seconds(30))
        try await TestDatabase.withOwnerAndService(limits: limits, poolSize: 1) { _, service in
            // Connected before the clock starts. On a machine busy with the whole suite the session's start, which
            // runs under the same 1 s limit, once took longer and was cancelled: tried until it answers (a guard of
            // a minute).
            let connecting = ContinuousClock.now
            var connected = false
            while !connected, ContinuousClock.now - connecting < .seconds(60) {
                connected = (try? await service.query("SELECT 1", logger: .init(label: "test"))) != nil
            }
            #expect(connected)
            let started = ContinuousClock.now
            let state = await sqlState {
                try await service.query("SELECT pg_sleep(60)", logger: .init(label: "test")) { rows in
                    for try await _ in rows {}
                }
            }
            #expect(state == "57014", "query_canceled by statement_timeout")
            #expect(ContinuousClock.now - started < .seconds(30), "ended by PostgreSQL long before the sleep would")
        }
    }

    @Test func aLockWaitPastTheLockTimeoutIsEndedByPostgreSQL() async throws {
        let limits = ServerLimits(statement: .seconds(30), lock: .milliseconds(200), idleInTransaction: .seconds(30))
        try await TestDatabase.withOwnerAndService(limits: limits) { owner, service in
            let locked = AsyncStream<Void>.makeStream()
            let released = AsyncStream<Void>.makeStream()
            let holder = Task {
                try await owner.withConnection { connection in
                    try await connection.query("SELECT pg_advisory_lock(4242)", logger: .init(label: "test"))
                    locked.continuation.yield()
                    for await _ in released.stream { break }
                    try await connection.query("SELECT pg_advisory_unlock(4242)", logger: .init(label: "test"))
                }
            }
            defer { released.continuation.finish() }
            for await _ in locked.stream { break }
            let state = await sqlState {
                try await service.query("SELECT pg_advisory_lock(4242)", logger: .init(label: "test")) { rows in
                    for try await _ in rows {}
                }
            }
            #expect(state == "55P03", "lock_not_available by lock_timeout")
            released.continuation.finish()
            try await holder.value
        }
    }

    @Test func theOperatorsCommandsConnectWithoutLimits() async throws {
        try await TestDatabase.withURL { url, _ in
            // What every operator's command (migrate, rebuild, verify, …) connects with.
            let (database, _) = try Database.resolve(url: url)
            let shown = try await database.withClient { operatorClient in try await Self.shown(operatorClient) }
            #expect(shown == ["0", "0", "0"])
        }
    }

    @Test func durationsBeyondWhatPostgreSQLTakesAreClamped() {
        let huge = ServerLimits(statement: .seconds(Int64.max), lock: .seconds(-5), idleInTransaction: .milliseconds(1))
        #expect(huge.startupParameters.map(\.1) == ["2147483647ms", "0ms", "1ms"])
    }

    /// What a session of `client` shows for statement_timeout, lock_timeout and idle_in_transaction_session_timeout.
    static func shown(_ client: SessionPool) async throws -> [String?] {
        // The session's start runs under the limits it sets: on a machine busy with the whole suite a start under
        // 1.5 s was once cancelled by them. Tried until a session answers (a guard of a minute).
        let connecting = ContinuousClock.now
        while (try? await client.query("SELECT 1", logger: .init(label: "test"))) == nil, ContinuousClock.now - connecting < .seconds(60) {}
        var shown: [String?] = []
        for setting in ["statement_timeout", "lock_timeout", "idle_in_transaction_session_timeout"] {
            shown.append(try await firstText("SHOW \(unescaped: setting)", on: client))
        }
        return shown
    }

    /// The SQLSTATE of the error `work` throws; nil when it throws none or no database error.
    func sqlState(_ work: () async throws -> Void) async -> String? {
        do {
            try await work()
            return nil
        } catch let error as PSQLError {
            return error.serverInfo?[.sqlState]
        } catch {
            return nil
        }
    }
}
