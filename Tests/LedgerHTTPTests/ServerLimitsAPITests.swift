import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import LedgerCore
import LedgerHTTP
@testable import LedgerPostgres
import LedgerTestSupport
import PostgresNIO
import Synchronization
import Testing

/// The service answers in bounded time whatever the database does: readiness has a deadline, and work PostgreSQL
/// itself ends at the service's limits is a 503 to retry, not a 500.
@Suite("HTTP: readiness and PostgreSQL's limits")
struct ServerLimitsAPITests {
    @Test func readinessAnswers503InBoundedTimeWhenTheDatabaseStopsAnswering() async throws {
        try await API.run(limits: .service, poolSize: 1) { api, owner in
            // The pool's one connection opened first, without a deadline: on a machine busy with the whole suite,
            // connecting alone can take longer than readiness waits.
            try await api.ledger.client.query("SELECT 1", logger: .init(label: "test"))
            // No readiness check before: that the service is ready while the database answers is
            // `FeedAndDocumentTests`' to show. Here a check that ran past its 2 s under the whole suite's load closed
            // the only session, and the next one had to open another: the stopped backend was then not the one
            // readiness used (and in one run no check said ready for a minute).
            // The service's only session; stopping its backend leaves a connection on which no query ever returns.
            let backends = try await owner.query(
                "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND usename = 'ledger_service'",
                logger: .init(label: "test")
            ) { rows in
                var pids: [Int32] = []
                for try await pid in rows.decode(Int32.self) { pids.append(pid) }
                return pids
            }
            let backend = try #require(backends.count == 1 ? backends.first : nil, "\(backends)")
            #expect(kill(backend, SIGSTOP) == 0)
            let started = ContinuousClock.now
            // The backend answers nothing until SIGCONT, which comes after the answer: only readiness's own deadline
            // can answer. The guard only keeps a check that never answers from hanging the test; it is wide, since
            // under the whole suite and two busy cores the answer once took 22.7 s past a 2 s deadline.
            let answer = await firstWithin(.seconds(90)) { try await api.get("/readyz", token: nil) }
            let waited = ContinuousClock.now - started
            #expect(kill(backend, SIGCONT) == 0)
            let unready = try #require(answer, "readiness did not answer within 90 s")
            #expect(unready.status == .serviceUnavailable, "after \(waited)")
            #expect(unready.errorCode == "unavailable")
            #expect(unready.headers[.retryAfter] == "1")
        }
    }

    @Test func anAppendPostgreSQLEndsAtTheLockTimeoutAnswers503AndWritesNothing() async throws {
        let limits = ServerLimits(statement: .seconds(30), lock: .milliseconds(300), idleInTransaction: .seconds(30))
        try await API.run(limits: limits) { api, owner in
            let lifecycle = Lifecycle()
            #expect(try await api.post("held", lifecycle.created).status == .created)
            let locked = AsyncStream<Void>.makeStream()
            let released = AsyncStream<Void>.makeStream()
            let holder = Task {
                try await owner.withTransaction(logger: .init(label: "test")) { connection in
                    try await connection.query("SELECT 1 FROM streams WHERE kind = 'order' AND stream_id = 'held' FOR UPDATE", logger: .init(label: "test"))
                    locked.continuation.yield()
                    for await _ in released.stream { break }
                }
            }
            defer { released.continuation.finish() }
            for await _ in locked.stream { break }
            // No client-side deadline here: PostgreSQL alone ends the wait.
            let answered = await Deadline.$request.withValue(nil) {
                await firstWithin(.seconds(30)) { try await api.post("held", lifecycle.queued) }
            }
            let answer = try #require(answered, "the append still waited on the lock after 30 s")
            #expect(answer.status == .serviceUnavailable, "\(answer.bodyText)")
            #expect(answer.errorCode == "unavailable")
            #expect(answer.headers[.retryAfter] == "1")
            released.continuation.finish()
            try await holder.value
            #expect(try await api.ledger.store.count("events") == 1, "the refused append wrote nothing")
        }
    }

    @Test func aStatementPostgreSQLCancelledAtTheStatementTimeoutIsUnavailableNotABug() async throws {
        let limits = ServerLimits(statement: .milliseconds(200), lock: .seconds(30), idleInTransaction: .seconds(30))
        try await API.run(limits: limits) { api, _ in
            do {
                try await api.ledger.client.query("SELECT pg_sleep(20)", logger: .init(label: "test")) { rows in
                    for try await _ in rows {}
                }
                Issue.record("the statement outlived its timeout")
            } catch {
                #expect((error as? PSQLError)?.serverInfo?[.sqlState] == "57014")
                let mapped = APIError(from: error)
                #expect(mapped.status == .serviceUnavailable)
                #expect(mapped.code == "unavailable")
            }
        }
    }
}

extension API {
    /// Like `run`, with the service connected with PostgreSQL's own limits (as `serve` connects it); `body` also
    /// gets the owner's client.
    static func run(
        limits: ServerLimits, poolSize: Int = 4, _ body: @Sendable @escaping (API, SessionPool) async throws -> Void
    ) async throws {
        try await TestDatabase.withOwnerAndService(limits: limits, poolSize: poolSize) { owner, service in
            let database = LedgerDatabase(client: service)
            let tokens = TokenStore(client: owner)
            let secrets = ["all": try await tokens.create(name: "all", scopes: Scope.allCases)]
            let app = Application(router: LedgerApplication.router(database: database), logger: API.logger)
            try await app.test(.router) { client in
                try await body(API(client: client, database: database, tokens: tokens, secrets: secrets), owner)
            }
        }
    }
}

/// `work`'s result, or nil when it has not answered within `limit`. The work runs in a task of its own that is not
/// waited for: a guard that waited for it (as a task group does) would hang with it.
func firstWithin<T: Sendable>(_ limit: Duration, _ work: @Sendable @escaping () async throws -> T) async -> T? {
    let answer = OnceAnswer<T?>()
    return await withCheckedContinuation { continuation in
        answer.set(continuation)
        Task {
            do { answer.give(try await work()) } catch {
                // Not the deadline's nil: say what ended the work (seen once under the whole suite, unexplained).
                Issue.record("the work threw \(String(reflecting: error))")
                answer.give(nil)
            }
        }
        Task {
            try? await Task.sleep(for: limit)
            answer.give(nil)
        }
    }
}

/// Resumes a continuation once, with whichever answer comes first.
final class OnceAnswer<T: Sendable>: Sendable {
    private let continuation = Mutex<CheckedContinuation<T, Never>?>(nil)
    func set(_ continuation: CheckedContinuation<T, Never>) { self.continuation.withLock { $0 = continuation } }
    func give(_ value: T) {
        continuation.withLock { $0?.resume(returning: value); $0 = nil }
    }
}
