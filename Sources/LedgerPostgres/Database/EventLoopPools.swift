import Logging
import NIOCore
import NIOPosix
import PostgresNIO

/// `serve`'s sessions, split into a pool per event loop, each pool's sessions on its own loop; a request uses the pool
/// of the loop it runs on.
///
/// Why: in `serve` Swift tasks run on NIO's event loops (`ServeCommand`), and a task stays on the loop that last
/// resumed it. With one pool, every session was on one loop: a request moved to that loop when the database answered,
/// and that loop did three quarters of the service's work while the other one idled. Each loop with its own sessions
/// keeps a request where its HTTP connection is, and both loops busy: history reads +12–15 %, single appends +15 %
/// (16 clients, 2 cores; BENCHMARKS.md).
///
/// The configured sessions are shared out, at least `minimumSessions` to a pool, so there are fewer pools than loops
/// when the sessions are few: a loop's requests wait for its own pool's sessions, never another's, and the first pool
/// also serves the sealer (one session while it seals) and the operator's work. A caller on no loop with a pool of its own (a command,
/// a test, the sealer's thread) uses the first pool.
struct EventLoopPools: Sendable {
    private let pools: [(loop: (any EventLoop)?, client: SessionPool)]

    /// The fewest sessions a pool is given.
    static let minimumSessions = 4

    /// All sessions in one pool: the commands', and any ledger not run by `serve`.
    init(_ client: SessionPool) {
        pools = [(nil, client)]
    }

    /// A pool for each of the first loops of `group`: as many as `shares` gives sessions to.
    /// They share `servers`: the first pool to find a new primary sends every pool's next session to it.
    init(
        configuration: PostgresClient.Configuration, servers: DatabaseServers?, group: MultiThreadedEventLoopGroup,
        backgroundLogger: Logger
    ) {
        let loops = Array(group.makeIterator())
        let shares = Self.shares(of: configuration.options.maximumConnections, loops: loops.count)
        pools = zip(loops, shares).map { loop, sessions in
            var configuration = configuration
            configuration.options.maximumConnections = sessions
            let pool = SessionPool(configuration: configuration, servers: servers, eventLoopGroup: loop, backgroundLogger: backgroundLogger)
            return (loop, pool)
        }
    }

    /// Each pool's sessions: `sessions` dealt as evenly as they go over as many pools as have `minimumSessions` each,
    /// at most one per loop (8 over 2 loops: 4 and 4; 8 over 8 loops: 4 and 4; 6: one pool of 6).
    static func shares(of sessions: Int, loops: Int) -> [Int] {
        let count = max(1, min(loops, sessions / minimumSessions))
        return (0..<count).map { index in sessions / count + (index < sessions % count ? 1 : 0) }
    }

    /// The first pool, the one of callers on no loop of the group.
    var first: SessionPool { pools[0].client }

    /// The pool whose sessions live on the caller's event loop; the first when the caller runs on none of them.
    var current: SessionPool {
        for pool in pools.dropFirst() where pool.loop?.inEventLoop == true { return pool.client }
        return pools[0].client
    }

    /// Runs every pool until the task is cancelled.
    func run() async {
        await withDiscardingTaskGroup { group in
            for pool in pools {
                group.addTask { await pool.client.run() }
            }
        }
    }
}
