import Foundation
@testable import LedgerPostgres
import Logging
import PostgresNIO

/// The tests' PostgreSQL: one embedded cluster per test process, started on first use (and stopped when the
/// process exits, if we started it), and a fresh database for each test, cloned from a migrated template.
/// No PostgreSQL on the machine means every storage test fails with the reason — never a silent skip.
public enum TestDatabase {
    /// `LEDGER_TEST_DATA_DIR`, default a directory of this test process's own under /tmp, removed when it exits:
    /// two test runs on one machine (two checkouts, CI beside a developer) never share, drop or stop each other's
    /// cluster. Each run pays one initdb (about a second).
    static let dataDirectory = URL(fileURLWithPath:
        ProcessInfo.processInfo.environment["LEDGER_TEST_DATA_DIR"] ?? "/tmp/orderledger-test-\(geteuid())-\(getpid())")

    static let template = "ledger_template"

    /// Started once per process; every test awaits the same task.
    static let cluster = Task<EmbeddedPostgres, any Error> {
        removeClustersOfEndedRuns()
        // Every suite runs at once, each test with a pool of its own, some with three `serve` nodes beside it. With 500,
        // the cluster refused sessions for much of the suite's first minute (thousands of "too many clients"), and a
        // pool that had none could wait minutes for one.
        let cluster = EmbeddedPostgres(dataDirectory: dataDirectory, maximumConnections: 1000)
        if try cluster.start() {
            clusterToStopAtExit = cluster
            atexit {
                guard let cluster = clusterToStopAtExit else { return }
                try? cluster.stop()
                if ProcessInfo.processInfo.environment["LEDGER_TEST_DATA_DIR"] == nil {
                    try? FileManager.default.removeItem(at: cluster.dataDirectory)
                }
            }
        }
        try await admin(cluster) { client in
            try await client.query("DROP DATABASE IF EXISTS \(unescaped: template) WITH (FORCE)")
            try await client.query("CREATE DATABASE \(unescaped: template)")
        }
        _ = try await Database(configuration: cluster.configuration(database: template)).withClient { client in
            try await Migrator(client: client).migrate()
            try await ServiceRole.allowLogin(password: nil, client: client, logger: Logger(label: "test"))
        }
        return cluster
    }

    nonisolated(unsafe) static var clusterToStopAtExit: EmbeddedPostgres?

    /// Stops and removes the clusters of test runs that ended without cleaning up (killed, or crashed): a directory
    /// `/tmp/orderledger-test-<uid>-<pid>` whose process is gone.
    static func removeClustersOfEndedRuns() {
        guard ProcessInfo.processInfo.environment["LEDGER_TEST_DATA_DIR"] == nil else { return }
        let prefix = "orderledger-test-\(geteuid())-"
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/tmp")) ?? []
        for name in names where name.hasPrefix(prefix) {
            guard let pid = pid_t(name.dropFirst(prefix.count)), pid != getpid(), kill(pid, 0) != 0, errno == ESRCH else { continue }
            let directory = URL(fileURLWithPath: "/tmp").appendingPathComponent(name)
            try? EmbeddedPostgres(dataDirectory: directory).stop()
            try? FileManager.default.removeItem(at: directory)
        }
    }

    /// Runs `body` against a fresh, migrated database of its own, as its owner; drops it afterwards.
    public static func withClient<T: Sendable>(
        poolSize: Int = 40, _ body: @Sendable @escaping (SessionPool) async throws -> T
    ) async throws -> T {
        try await withFresh(poolSize: poolSize) { database, _ in try await database.withClient(body) }
    }

    /// Runs `body` with two clients to one fresh database: its owner's (set-up, tokens) and the least-privileged
    /// service role's, the one `serve` connects as.
    public static func withOwnerAndService<T: Sendable>(
        poolSize: Int = 40, _ body: @Sendable @escaping (_ owner: SessionPool, _ service: SessionPool) async throws -> T
    ) async throws -> T {
        try await withFresh(poolSize: poolSize) { database, _ in
            try await database.withClient { owner in
                try await Database(configuration: database.serviceConfiguration).withClient { service in
                    try await body(owner, service)
                }
            }
        }
    }

    /// Runs `body` with the URL of a fresh, migrated database (for driving the `ledger` binary), and a client to it.
    public static func withURL<T: Sendable>(
        _ body: @Sendable @escaping (_ url: String, _ client: SessionPool) async throws -> T
    ) async throws -> T {
        let socketDirectory = try await cluster.value.socketDirectory.path
        return try await withFresh(poolSize: 40) { database, name in
            try await database.withClient { client in
                try await body("postgres://postgres@/\(name)?host=\(socketDirectory)", client)
            }
        }
    }

    /// The URL of the database `name` in the tests' cluster, as its owner (for driving the `ledger` binary).
    public static func url(of name: String) async throws -> String {
        "postgres://postgres@/\(name)?host=\(try await cluster.value.socketDirectory.path)"
    }

    /// A fresh migrated database for `body`, dropped afterwards whatever happens.
    static func withFresh<T: Sendable>(
        poolSize: Int, _ body: @Sendable @escaping (_ database: Database, _ name: String) async throws -> T
    ) async throws -> T {
        let (database, name) = try await fresh(poolSize: poolSize)
        do {
            let result = try await body(database, name)
            try await drop(name)
            return result
        } catch {
            try? await drop(name)
            throw error
        }
    }

    /// A fresh migrated database's connection settings, and its name (for `drop`).
    public static func fresh(poolSize: Int = 40) async throws -> (Database, String) {
        let cluster = try await cluster.value
        let name = "test_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        try await admin(cluster) { client in
            try await client.query("CREATE DATABASE \(unescaped: name) TEMPLATE \(unescaped: template)")
        }
        var configuration = cluster.configuration(database: name)
        configuration.options.maximumConnections = poolSize
        return (Database(configuration: configuration, embedded: cluster), name)
    }

    /// Runs `body` with the URL of a database of its own made from a plain SQL dump (`pg_dump`), loaded by `psql`
    /// into an empty database, and a client to it: no migration runs first, the dump brings its own schema (run
    /// `ledger migrate` on the URL before the client writes). Dropped afterwards.
    public static func withDump<T: Sendable>(
        _ dump: URL, _ body: @Sendable @escaping (_ url: String, _ client: SessionPool) async throws -> T
    ) async throws -> T {
        let cluster = try await cluster.value
        let name = "dump_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        try await admin(cluster) { client in
            try await client.query("CREATE DATABASE \(unescaped: name) TEMPLATE template0")
        }
        do {
            let url = try await url(of: name)
            let loaded = try PostgresBinaries.locate().run(
                "psql", ["--quiet", "--no-psqlrc", "-v", "ON_ERROR_STOP=1", "--file", dump.path, "--dbname", url], as: nil)
            guard loaded.status == 0 else { throw DumpNotLoaded(dump: dump.path, output: loaded.output) }
            var configuration = cluster.configuration(database: name)
            configuration.options.maximumConnections = 8
            let result = try await Database(configuration: configuration).withClient { client in try await body(url, client) }
            try await drop(name)
            return result
        } catch {
            try? await drop(name)
            throw error
        }
    }

    struct DumpNotLoaded: Error, CustomStringConvertible {
        let dump: String
        let output: String
        var description: String { "psql could not load \(dump): \(output)" }
    }

    public static func drop(_ name: String) async throws {
        try await admin(try await cluster.value) { client in
            try await client.query("DROP DATABASE IF EXISTS \(unescaped: name) WITH (FORCE)")
        }
    }

    /// Statements that must run outside any test database (CREATE/DROP DATABASE).
    static func admin(_ cluster: EmbeddedPostgres, _ body: @Sendable @escaping (SessionPool) async throws -> Void) async throws {
        var configuration = cluster.configuration(database: "postgres")
        configuration.options.maximumConnections = 2
        try await Database(configuration: configuration).withClient(body)
    }
}
