@testable import LedgerPostgres
import LedgerTestSupport
import NIOCore
import NIOPosix
import Testing

/// A task that prefers an event loop (`EventLoopExecutor`) runs there throughout: a request's task on its connection's
/// loop, where its database sessions are too (`EventLoopPools`).
@Suite("Database: event loops as task executors")
struct EventLoopExecutorTests {
    @Test func aTaskPreferringALoopStaysOnItAcrossAwaits() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let loops = Array(group.makeIterator())
        let (home, other) = (loops[0], loops[1])
        let seen = await withTaskExecutorPreference(EventLoopExecutor(home)) {
            var seen = [home.inEventLoop]
            // Resumed by a future the other loop completes.
            _ = try? await other.submit { 1 }.get()
            seen.append(home.inEventLoop)
            // Into and back from nonisolated async code.
            seen.append(await Self.onAnyExecutor { home.inEventLoop })
            seen.append(home.inEventLoop)
            return seen
        }
        #expect(seen == [true, true, true, true])
        try await group.shutdownGracefully()
    }

    /// The deadline runs the work in a task of its own (`SessionPool.withConnection(within:)`): it stays on the
    /// caller's loop, the loop of the caller's pool.
    @Test func workUnderADeadlineRunsOnTheCallersLoop() async throws {
        let (database, _) = try await TestDatabase.fresh(poolSize: 2)
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let onLoop = try await database.withClient { client in
            try await withTaskExecutorPreference(EventLoopExecutor(loop)) {
                try await client.withConnection(within: .seconds(60), .reads) { connection in
                    _ = try await connection.query("SELECT 1", logger: .init(label: "test")).collect()
                    return loop.inEventLoop
                }
            }
        }
        #expect(onLoop)
    }

    private static func onAnyExecutor<T: Sendable>(_ body: @Sendable () -> T) async -> T {
        await Task.yield()
        return body()
    }
}
