import Foundation
@testable import LedgerPostgres
import LedgerTestSupport
import NIOCore
import NIOPosix
import PostgresNIO
import Synchronization
import Testing

/// Database work gives up at its deadline, whether it waits for a connection or on one, so no request hangs.
@Suite("Database: deadlines")
struct DeadlineTests {
    /// A request's database calls share one deadline: during an outage an append (a read, then its retries) or a
    /// read after a token check used to get the whole deadline per call, and answered after twice the documented 5 s.
    @Test func theCallsOfOneRequestShareItsDeadline() async throws {
        // A server that accepts connections and never answers, as a hung PostgreSQL does: every lease waits for a
        // session the pool cannot finish opening (a refused connection fails the lease at once, `SessionPool`).
        let silent = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton).bind(host: "127.0.0.1", port: 0).get()
        defer { silent.close(promise: nil) }
        var configuration = PostgresClient.Configuration(
            host: "127.0.0.1", port: silent.localAddress?.port ?? 1, username: "nobody", password: nil, database: nil, tls: .disable)
        configuration.options.connectTimeout = .seconds(60)
        let (timeouts, waited) = try await Database(configuration: configuration).withClient { client in
            let ledger = Ledger(client: client)
            let started = ContinuousClock.now
            let timeouts = try await Deadline.$request.withValue(.seconds(3)) {
                try await Deadline.forRequest {
                    var timeouts = 0
                    for _ in 0..<4 {
                        do { _ = try await ledger.order("order-1") } catch is DatabaseTimeout { timeouts += 1 }
                    }
                    return timeouts
                }
            }
            return (timeouts, ContinuousClock.now - started)
        }
        #expect(timeouts == 4)
        // One deadline of 3 s for the four calls; each call with a deadline of its own takes at least 12 s, so anything
        // less shows the deadline shared. (A machine busy with the whole suite and two other loads took 9.4 s: the bound
        // is the one that tells the two apart, not a guess at the machine's speed.)
        #expect(waited < .seconds(12), "four calls of one request took \(waited)")
    }

    @Test func workStuckOnItsConnectionEndsAtTheDeadlineAndItsConnectionIsClosed() async throws {
        // The stuck work runs on a pool of its own (that its pool gives the session's place to the next lease at once:
        // `ServicePoolTests.aSessionADeadlineClosedFreesItsPlaceAtOnce`). The test shows what the deadline promises:
        // the caller is answered, and work elsewhere goes on.
        // lock_timeout, set when each connection opens, is a fail-safe, not the synchronisation.
        let (database, _) = try await TestDatabase.fresh(poolSize: 2)
        let configuration = {
            var configuration = database.configuration
            configuration.options.additionalStartupParameters.append(("lock_timeout", "60s"))
            return configuration
        }()
        try await database.withClient { client in
            // The test holds an advisory lock on one connection; the work, on another client, waits for it: a query
            // whose answer cannot come until the test lets it (PostgresNIO queries ignore cancellation).
            try await client.withConnection { holder in
                try await holder.query("SELECT pg_advisory_lock(\(Self.stuckLock))", logger: .init(label: "test"))
                // 10 s: room for a machine busy with the whole suite to hand over the idle connection first. Even so,
                // under the whole suite and two busy loops, the deadline once came before the work had its connection;
                // such an attempt shows nothing about stuck work (nothing ran), so it is tried again, five times at most.
                var onItsConnection = StartedFlag()
                var waited = Duration.zero
                for _ in 1...5 {
                    onItsConnection = StartedFlag()
                    let flag = onItsConnection
                    waited = try await Database(configuration: configuration).withClient { stuck in
                        try await stuck.query("SELECT 1")  // connected before the clock starts
                        let started = ContinuousClock.now
                        do {
                            try await stuck.withConnection(within: .seconds(10)) { connection in
                                flag.set()
                                try await connection.query("SELECT pg_advisory_lock(\(Self.stuckLock))", logger: .init(label: "test"))
                            }
                            Issue.record("the stuck work returned")
                        } catch is DatabaseTimeout {}
                        return ContinuousClock.now - started
                    }
                    if onItsConnection.isSet { break }
                }
                #expect(onItsConnection.isSet, "in five tries, the deadline always came while the work waited for a connection")
                // Far below the fail-safe's 60 s, with room for a machine busy with the whole suite.
                #expect(waited < .seconds(30), "the stuck query held the caller for \(waited)")
                // Work elsewhere goes on while the old query is still stuck. (120 s: the pool may have to open this
                // connection, and the whole suite's pools share one cluster; once, under load, 30 s was not enough.)
                let one = try await client.withConnection(within: .seconds(120)) { connection in
                    for try await value in try await connection.query("SELECT 1", logger: .init(label: "test")).decode(Int.self) {
                        return value
                    }
                    return 0
                }
                #expect(one == 1)
                try await holder.query("SELECT pg_advisory_unlock(\(Self.stuckLock))", logger: .init(label: "test"))
            }
        }
    }

    @Test func waitingForAConnectionEndsAtTheDeadline() async throws {
        try await TestDatabase.withClient(poolSize: 1) { client in
            // The pool's one connection is opened first, without a deadline: on a machine busy with the whole suite,
            // opening it can take longer than any deadline worth testing.
            try await client.query("SELECT 1")
            let (holding, holds) = AsyncStream<Void>.makeStream()
            let (released, release) = AsyncStream<Void>.makeStream()
            let holder = Task {
                defer { holds.finish() }  // also if the holder never gets the connection: the test then fails, not hangs
                try await client.withConnection(within: .seconds(120)) { _ in
                    holds.finish()  // the holder has the pool's only connection
                    await Self.waitUntilFinished(released, atMost: .seconds(100))
                }
            }
            for await _ in holding {}
            let started = ContinuousClock.now
            await #expect(throws: DatabaseTimeout.self) {
                try await client.withConnection(within: .milliseconds(300)) { _ in }
            }
            #expect(ContinuousClock.now - started < .seconds(10), "a 300 ms deadline, not the holder's 100 s")
            release.finish()
            try await holder.value
        }
    }

    @Test func workThatFinishesInTimeReturnsItsResultAndErrors() async throws {
        try await TestDatabase.withClient { client in
            // Generous: the whole suite shares two cores; this test is about answers, not the deadline's length.
            let value = try await client.withConnection(within: .seconds(60)) { connection in
                for try await value in try await connection.query("SELECT 41 + 1", logger: .init(label: "test")).decode(Int.self) {
                    return value
                }
                return 0
            }
            #expect(value == 42)
            struct Refused: Error {}
            await #expect(throws: Refused.self) {
                try await client.withConnection(within: .seconds(60)) { _ in throw Refused() }
            }
        }
    }

    /// The advisory lock key the stuck work waits on (advisory locks are per database, and each test has its own).
    static let stuckLock: Int64 = 0x5EAD_11FE

    /// Returns when `stream` finishes, or after `limit` at the latest: a broken deadline then fails the test (the
    /// waiter gets the connection late) instead of hanging it. A fail-safe, not the synchronisation.
    static func waitUntilFinished(_ stream: AsyncStream<Void>, atMost limit: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { for await _ in stream {} }
            group.addTask { try? await Task.sleep(for: limit) }
            await group.next()
            group.cancelAll()
        }
    }
}

/// Set once, read from another task.
private final class StartedFlag: Sendable {
    private let value = Mutex(false)
    func set() { value.withLock { $0 = true } }
    var isSet: Bool { value.withLock { $0 } }
}
