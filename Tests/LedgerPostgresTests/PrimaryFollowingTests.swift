import Foundation
@testable import LedgerPostgres
import LedgerTestSupport
import NIOCore
import NIOPosix
import PostgresNIO
import Synchronization
import Testing

/// A pool given several servers uses only the one that fits (`DatabaseServers`), and finds the new primary after a
/// failover: real clusters, a primary and its streaming standby, the standby named first.
@Suite(.serialized) struct PrimaryFollowingTests {
    /// Both clusters' sockets, the standby's first.
    static func url(_ primary: EmbeddedPostgres, _ standby: EmbeddedPostgres, target: String) -> String {
        "postgres://postgres@/postgres?host=\(standby.socketDirectory.path),\(primary.socketDirectory.path)&target_session_attrs=\(target)"
    }

    static func inRecovery(_ pool: SessionPool) async throws -> Bool {
        try await pool.withConnection(.reads) { connection in
            for try await inRecovery in try await connection.query("SELECT pg_is_in_recovery()", logger: .init(label: "test")).decode(Bool.self) {
                return inRecovery
            }
            return true
        }
    }

    static func numbers(_ sql: String, on pool: SessionPool) async throws -> [Int] {
        var numbers: [Int] = []
        for try await number in try await pool.query(PostgresQuery(unsafeSQL: sql), .reads).decode(Int.self) { numbers.append(number) }
        return numbers
    }

    @Test func eachTargetFindsItsServer() async throws {
        try await StreamingStandby.withClusters { primary, standby in
            for (target, expected) in [("read-write", false), ("primary", false), ("standby", true), ("prefer-standby", true), ("read-only", true)] {
                let inRecovery = try await Database(url: Self.url(primary, standby, target: target)).withClient { try await Self.inRecovery($0) }
                #expect(inRecovery == expected, "\(target)")
            }
            // No server fits: an error the API answers 503, naming what each server is.
            let onlyStandby = "postgres://postgres@/postgres?host=\(standby.socketDirectory.path)&target_session_attrs=read-write"
            let pool = SessionPool(configuration: try Database(url: onlyStandby).configuration, servers: try Database(url: onlyStandby).servers, givingUpAfter: .milliseconds(300))
            let error = await #expect(throws: NoServerFits.self) { try await pool.withConnection { _ in } }
            #expect(error?.description.contains("is a standby") == true)
            #expect(error.map { DatabaseErrors.isUnavailable($0) } == true)
            await pool.close()
        }
    }

    /// A first server that takes the connection and never answers (a stalled machine) delays a new session by the
    /// connect timeout, then the next server gives it.
    @Test func aServerThatAnswersNothingIsPassedOverAfterTheConnectTimeout() async throws {
        try await StreamingStandby.withClusters { primary, _ in
            let silent = try await Self.silentListener()
            defer { try? silent.close().wait() }
            var configuration = primary.configuration(database: "postgres")
            configuration.options.connectTimeout = .seconds(1)
            let servers = DatabaseServers(
                addresses: [.tcp(host: "127.0.0.1", port: silent.localAddress?.port ?? 1), .socket(path: primary.socketPath)],
                target: .readWrite)
            // Bounded, so that a session opening that hangs fails the test instead of holding it.
            let inRecovery = try await Database(configuration: configuration, servers: servers).withClient { pool in
                try await pool.withConnection(within: .seconds(30), .reads) { connection in
                    for try await inRecovery in try await connection.query("SELECT pg_is_in_recovery()", logger: .init(label: "test")).decode(Bool.self) {
                        return inRecovery
                    }
                    return true
                }
            }
            #expect(inRecovery == false)
        }
    }

    /// A TCP server that accepts connections and never says a word: to PostgreSQL's client, a server that does not
    /// answer its startup message.
    static func silentListener() async throws -> any Channel {
        try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .childChannelInitializer { _ in MultiThreadedEventLoopGroup.singleton.any().makeSucceededVoidFuture() }
            .bind(host: "127.0.0.1", port: 0).get()
    }

    /// The primary stops; until the standby is promoted a write fails as unavailable (503), and after it the same pool
    /// writes to the promoted server, with what the old primary had committed.
    @Test func aPoolFollowsThePrimaryThroughAFailover() async throws {
        try await StreamingStandby.withClusters { primary, standby in
            let database = try Database(url: Self.url(primary, standby, target: "read-write"))
            try await database.withClient { pool in
                try await pool.query("CREATE TABLE failover_probe (n int PRIMARY KEY)")
                try await pool.query("INSERT INTO failover_probe VALUES (1)")
                #expect(try await Self.inRecovery(pool) == false)
                // Replicated before the primary goes: a synchronous standby would have it at the commit.
                let caughtUp = try await StreamingStandby.eventually {
                    // The table itself may not have been replayed yet.
                    let standbyRows = try? await Database(configuration: standby.configuration(database: "postgres")).withClient { onStandby in
                        try await Self.numbers("SELECT count(*)::int FROM failover_probe", on: onStandby)
                    }
                    return standbyRows == [1]
                }
                #expect(caughtUp)

                try primary.stop()
                let during = await #expect(throws: (any Error).self) {
                    try await pool.withConnection(within: .seconds(2)) { try await $0.query("INSERT INTO failover_probe VALUES (2)", logger: .init(label: "test")) }
                }
                #expect(during.map { DatabaseErrors.isUnavailable($0) } == true, "\(String(describing: during))")

                try standby.promote()
                // Retried as a client retries an append: a write whose answer was lost (a deadline passed on a busy
                // machine) may have been stored, so the retry must not store it twice.
                let written = try await StreamingStandby.eventually {
                    (try? await pool.withConnection(within: .seconds(10)) {
                        try await $0.query("INSERT INTO failover_probe VALUES (3) ON CONFLICT DO NOTHING", logger: .init(label: "test"))
                    }) != nil
                }
                #expect(written)
                #expect(try await Self.inRecovery(pool) == false)
                #expect(await LedgerDatabase(client: pool).operations.readiness(within: .seconds(60), logger: .init(label: "test"))?.takesWrites == true)
                let rows = try await Self.numbers("SELECT n FROM failover_probe ORDER BY n", on: pool)
                #expect(rows == [1, 3])
            }
        }
    }

    /// A write that reaches a standby anyway (a one-server URL naming it) is answered as unavailable, not as a fault,
    /// and its session is closed, so that the next one is opened afresh.
    @Test func aWriteOnAStandbyIsUnavailableAndItsSessionClosed() async throws {
        try await StreamingStandby.withClusters { _, standby in
            try await Database(configuration: standby.configuration(database: "postgres")).withClient { pool in
                var session: PostgresConnection?
                let error = await #expect(throws: PSQLError.self) {
                    try await pool.withConnection { connection in
                        session = connection
                        try await connection.query("CREATE TABLE nope (n int)", logger: .init(label: "test"))
                    }
                }
                #expect(error.map { DatabaseErrors.isUnavailable($0) } == true)
                // `/readyz` says not ready: the service cannot write here.
                #expect(await LedgerDatabase(client: pool).operations.readiness(within: .seconds(60), logger: .init(label: "test"))?.takesWrites == false)
                let closed = try await StreamingStandby.eventually { session?.isClosed == true }
                #expect(closed)
                // The same under a deadline, as the service's requests run their work.
                let underDeadline = Mutex<PostgresConnection?>(nil)
                let failed: Void? = try? await pool.withConnection(within: .seconds(60)) { connection in
                    underDeadline.withLock { $0 = connection }
                    _ = try await connection.query("CREATE TABLE nope (n int)", logger: .init(label: "test"))
                }
                #expect(failed == nil)
                let closedToo = try await StreamingStandby.eventually { underDeadline.withLock { $0?.isClosed == true } }
                #expect(closedToo)
            }
        }
    }
}
