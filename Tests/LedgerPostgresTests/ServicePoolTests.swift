@testable import LedgerPostgres
import LedgerTestSupport
import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import Synchronization
import Testing

/// How the ledger keeps its sessions (`SessionPool`), and how `serve` shares them out.
@Suite("Database: the session pool")
struct ServicePoolTests {
    /// The pool pings no idle session (a timer per release was a third of a history read's CPU, BENCHMARKS.md):
    /// PostgreSQL keeps an idle session's path open instead, with TCP keep-alives (the test cluster listens on a Unix
    /// socket only, where they do not apply: `scripts/bench/run` and a URL-configured serve use TCP).
    @Test func theServiceSessionsAskPostgreSQLForTCPKeepAlives() throws {
        var configuration = try Database.configuration(fromURL: "postgres://ledger@127.0.0.1:5432/ledger")
        configuration.options.maximumConnections = 8
        let service = Database(configuration: configuration).serviceConfiguration(limits: .service)
        #expect(service.options.maximumConnections == 8)
        let asked = Dictionary(service.options.additionalStartupParameters, uniquingKeysWith: { $1 })
        #expect(asked["tcp_keepalives_idle"] == "30" && asked["tcp_keepalives_interval"] == "10" && asked["tcp_keepalives_count"] == "3")
    }

    /// After PostgreSQL dropped every session and refused new ones for a while (a restart), the pool serves as many
    /// leases at once as before, on new sessions. PostgresNIO's pool trapped here: it had dropped, without replacing,
    /// the sessions that failed while it retried one, and then held fewer than its minimum.
    @Test func afterPostgreSQLDroppedEverySessionThePoolOpensThemAgainUpToItsMaximum() async throws {
        let (database, name) = try await TestDatabase.fresh(poolSize: 4)
        let admin = SessionPool(configuration: try #require(database.embedded).configuration(database: "postgres"))
        try await database.withClient { pool in
            let before = try await Self.sessionsHeldAtOnce(4, from: pool)
            #expect(before.count == 4)

            try await admin.query("ALTER DATABASE \(unescaped: name) ALLOW_CONNECTIONS false")
            try await Self.endSessions(of: name, admin)
            // Once the pool has read the end of each: a lease before that took a dying session on a busy machine.
            #expect(await eventually(within: .seconds(60)) { pool.idleOpen == 0 })
            // While PostgreSQL refuses sessions and the pool has none, a lease waits (the pool trying) until its deadline.
            await #expect(throws: DatabaseTimeout.self) {
                try await pool.withConnection(within: .seconds(2)) { connection in
                    try await connection.query("SELECT 1", logger: Logger(label: "test")).collect()
                }
            }

            try await admin.query("ALTER DATABASE \(unescaped: name) ALLOW_CONNECTIONS true")
            let after = try await Self.sessionsHeldAtOnce(4, from: pool)
            #expect(after.count == 4)
            #expect(after.isDisjoint(with: before), "the sessions PostgreSQL ended were not served again")
        }
        await admin.close()
        try await TestDatabase.drop(name)
    }

    /// A deadline closes the session its stuck work holds (`withConnection(within:)`); the pool gives its place to the
    /// next lease at once, whether or not the work ever returns.
    @Test func aSessionADeadlineClosedFreesItsPlaceAtOnce() async throws {
        try await TestDatabase.withClient(poolSize: 1) { pool in
            let stuck = Gate()  // the work waits for the test, ignoring cancellation as a query on a dead session did
            let onItsSession = Gate()
            await #expect(throws: DatabaseTimeout.self) {
                // Its session opened first, so that the deadline finds the work on it (a busy cluster can be slow to open one).
                try await pool.withConnection(within: .seconds(120)) { _ in }
                // 5 s: time for the work's task to start on a machine busy with the whole suite.
                try await pool.withConnection(within: .seconds(5)) { _ in
                    onItsSession.open()
                    await stuck.wait()
                }
            }
            #expect(onItsSession.isOpen, "the deadline came while the work still waited for the session")
            let one = try await pool.withConnection(within: .seconds(120)) { connection in
                try await connection.query("SELECT 1", logger: Logger(label: "test")).decode(Int.self).first { _ in true }
            }
            #expect(one == 1, "the next lease waited for the stuck work's session")
            stuck.open()
        }
    }

    /// A pool that has no session and cannot open one tries for a while (`givingUpAfter`), then fails its waiting
    /// leases with the reason (here: no connection to the address at all): a command without a deadline is told, not
    /// kept waiting.
    @Test func aPoolThatCannotOpenASessionFailsItsLeasesOnceItGivesUp() async throws {
        let configuration = try Database.configuration(fromURL: "postgres://nobody@127.0.0.1:1/none")
        let pool = SessionPool(configuration: configuration, givingUpAfter: .seconds(1))
        let started = ContinuousClock.now
        await #expect(throws: SessionNotOpened.self) { try await pool.withConnection(within: .seconds(60)) { _ in } }
        let waited = ContinuousClock.now - started
        #expect(waited >= .seconds(1) && waited < .seconds(30), "failed after \(waited)")
        await pool.close()
    }

    /// Work a deadline gave up on before its task started is cancelled, and takes no session, not even an idle one.
    @Test func aCancelledTaskIsGivenNoSession() async throws {
        try await TestDatabase.withClient(poolSize: 1) { pool in
            try await pool.query("SELECT 1")  // one idle session
            let late = Task {
                withUnsafeCurrentTask { $0?.cancel() }
                return try await pool.withConnection { _ in true }
            }
            await #expect(throws: CancellationError.self) { try await late.value }
        }
    }

    @Test func aClosedPoolLeasesNothing() async throws {
        try await TestDatabase.withClient(poolSize: 2) { pool in
            try await pool.query("SELECT 1")
            await pool.close()
            await #expect(throws: SessionPoolClosed.self) { try await pool.withConnection(within: .seconds(30)) { _ in } }
        }
    }

    /// The backends of `pool`'s sessions while it holds `count` leases at once (each waits until all are held).
    static func sessionsHeldAtOnce(_ count: Int, from pool: SessionPool) async throws -> Set<Int32> {
        let barrier = Barrier(count)
        return try await withThrowingTaskGroup(of: Int32.self) { group in
            for _ in 0..<count {
                group.addTask {
                    // 120 s: the whole suite starts at once, and for a while the cluster refuses sessions to everyone.
                    try await pool.withConnection(within: .seconds(120)) { connection in
                        let rows = try await connection.query("SELECT pg_backend_pid()", logger: Logger(label: "test"))
                        let pid = try await rows.decode(Int32.self).first { _ in true } ?? 0
                        await barrier.arriveAndWait()
                        return pid
                    }
                }
            }
            return try await group.reduce(into: []) { $0.insert($1) }
        }
    }

    /// Ends every session to `database` but the caller's, waiting until each has ended.
    static func endSessions(of database: String, _ admin: SessionPool) async throws {
        try await admin.queryToEnd(
            "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity WHERE datname = \(database) AND pid <> pg_backend_pid()",
            logger: Logger(label: "test"))
    }

    /// `serve` keeps a pool per event loop (`EventLoopPools`): the sessions are shared out, never more in all than
    /// configured, at least four to a pool (a loop's requests wait for its own pool's sessions only).
    @Test func theSessionsAreSharedOutAtLeastFourToAPoolAndAtMostOnePoolToALoop() {
        #expect(EventLoopPools.shares(of: 8, loops: 2) == [4, 4])
        #expect(EventLoopPools.shares(of: 9, loops: 2) == [5, 4])
        #expect(EventLoopPools.shares(of: 8, loops: 8) == [4, 4])
        #expect(EventLoopPools.shares(of: 16, loops: 3) == [6, 5, 5])
        #expect(EventLoopPools.shares(of: 7, loops: 2) == [7])
        #expect(EventLoopPools.shares(of: 1, loops: 4) == [1])
        #expect(EventLoopPools.shares(of: 40, loops: 1) == [40])
    }

    /// A caller on an event loop is given the pool whose sessions live on that loop, so a request's database answers
    /// resume it where its HTTP connection is; a caller on no loop is given the first pool.
    @Test func aCallerOnAnEventLoopUsesTheSessionsOnThatLoop() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let (database, name) = try await TestDatabase.fresh(poolSize: 8)
        let pools = EventLoopPools(
            configuration: database.configuration, servers: nil, group: group, backgroundLogger: Logger(label: "test"))
        try await withThrowingDiscardingTaskGroup { tasks in
            tasks.addTask { await pools.run() }
            for loop in group.makeIterator() {
                let chosen = try await loop.submit { pools.current }.get()
                let sessionLoop = try await chosen.withConnection { $0.eventLoop }
                #expect(sessionLoop === loop)
            }
            #expect(pools.current === pools.first)
            tasks.cancelAll()
        }
        try await TestDatabase.drop(name)
        try await group.shutdownGracefully()
    }
}

/// Lets `count` tasks on until all of them have arrived.
final class Barrier: Sendable {
    private let state: Mutex<(arrived: Int, waiting: [CheckedContinuation<Void, Never>])>
    private let count: Int

    init(_ count: Int) {
        self.count = count
        state = Mutex((0, []))
    }

    func arriveAndWait() async {
        await withCheckedContinuation { continuation in
            let released = state.withLock { state -> [CheckedContinuation<Void, Never>] in
                state.arrived += 1
                state.waiting.append(continuation)
                guard state.arrived >= count else { return [] }
                defer { state.waiting = [] }
                return state.waiting
            }
            for waiter in released { waiter.resume() }
        }
    }
}
