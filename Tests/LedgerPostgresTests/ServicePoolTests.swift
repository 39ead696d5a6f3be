@testable import LedgerPostgres
import LedgerTestSupport
import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import Testing

/// How `serve`'s pool keeps its sessions. PostgresNIO's pool starts two timers each time a connection goes back to
/// it idle — its idle timeout, for connections above the minimum, and its keep-alive ping — each a task group of two
/// tasks and a libdispatch timer. Per request that was a third of `serve`'s CPU for a history read (BENCHMARKS.md).
@Suite("Database: the service's pool")
struct ServicePoolTests {
    @Test func everySessionIsKeptOpenAndThePoolPingsNoneSoAReleaseStartsNoTimer() throws {
        var configuration = try Database.configuration(fromURL: "postgres://ledger@127.0.0.1:5432/ledger")
        configuration.options.maximumConnections = 8
        let service = Database(configuration: configuration).serviceConfiguration(limits: .service)
        #expect(service.options.maximumConnections == 8)
        #expect(service.options.minimumConnections == 8)
        #expect(service.options.keepAliveBehavior.map { _ in true } == nil)
        // PostgreSQL keeps an idle session's path open instead, with TCP keep-alives (the test cluster listens on a Unix
        // socket only, where they do not apply: `scripts/bench/run` and a URL-configured serve use TCP).
        let asked = Dictionary(service.options.additionalStartupParameters, uniquingKeysWith: { $1 })
        #expect(asked["tcp_keepalives_idle"] == "30" && asked["tcp_keepalives_interval"] == "10" && asked["tcp_keepalives_count"] == "3")
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
            configuration: database.configuration, group: group, backgroundLogger: Logger(label: "test"))
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
